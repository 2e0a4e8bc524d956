//go:build !linux

package process

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// kubox-agent runs processes in Linux containers only (reaper_linux.go, pty_linux.go). Elsewhere,
// on a contributor's macOS, the package compiles so the tree builds and vets, and New fails.

type reaper struct{}

// subreaperErr makes New fail: there is no reaper to start.
var subreaperErr = errors.New("kubox-agent runs processes on Linux only")

func startReaper() *reaper { return &reaper{} }

// ReapOwnChildrenOnly does nothing: there is no reaper.
func ReapOwnChildrenOnly() error { return nil }

func (*reaper) spawn(func() (int, error), func(unix.WaitStatus)) (int, error) { return 0, subreaperErr }

func (*reaper) kill(int, syscall.Signal, func()) (bool, error) { return false, subreaperErr }

func (*reaper) killGroup(int) error { return subreaperErr }

func (*reaper) groupAlive(int) bool { return false }

func (*reaper) orphanCount() int { return 0 }
