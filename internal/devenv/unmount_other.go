//go:build !linux

package devenv

import "errors"

// Unmount fails: kubox dev runs its local node on Linux only (unmount_linux.go).
func Unmount(string) error { return errors.New("kubox dev runs on Linux only") }
