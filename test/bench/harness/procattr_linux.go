package harness

import "syscall"

// procAttr puts a started process in its own group and kills it when the benchmark dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
