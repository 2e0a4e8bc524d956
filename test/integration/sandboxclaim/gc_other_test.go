//go:build !linux

package sandboxclaim

import "syscall"

// gcProcAttr: only Linux kills a child with its parent.
func gcProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
