package testutil

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// OpenPTY opens a pseudo-terminal pair of rows x cols, as a terminal emulator would: the test
// writes what a person types to master and reads the screen from it; tty is the terminal a
// program under test gets as stdin, stdout and stderr. Both close when the test ends.
func OpenPTY(t testing.TB, rows, cols uint16) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { _ = master.Close() })
	var n int
	Control(t, master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return err
		}
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return err
	})
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/pts/%d: %v", n, err)
	}
	t.Cleanup(func() { _ = tty.Close() })
	SetPTYSize(t, tty, rows, cols)
	return master, tty
}

// Control runs fn with f's descriptor (without os.File.Fd, which would make it blocking).
func Control(t testing.TB, f *os.File, fn func(fd int) error) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
}

// SetPTYSize sets the terminal's size, as a terminal emulator does when its window is resized.
func SetPTYSize(t testing.TB, tty *os.File, rows, cols uint16) {
	t.Helper()
	Control(t, tty, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
}

// Termios reads the terminal's settings (raw mode, echo).
func Termios(t testing.TB, tty *os.File) unix.Termios {
	t.Helper()
	var st unix.Termios
	Control(t, tty, func(fd int) error {
		p, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if p != nil {
			st = *p
		}
		return err
	})
	return st
}
