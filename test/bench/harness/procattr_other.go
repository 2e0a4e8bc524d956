//go:build !linux

package harness

import "syscall"

// procAttr puts a started process in its own group (only Linux kills it with the benchmark).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
