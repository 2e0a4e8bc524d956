package sandboxclaim

import "syscall"

// gcProcAttr kills the garbage collector with the test binary, should the binary die first.
func gcProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
