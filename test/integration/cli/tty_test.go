package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

// openPTY opens a pseudo-terminal pair of rows x cols; both ends close when the test ends.
func openPTY(t *testing.T, rows, cols uint16) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { _ = master.Close() })
	var n int
	control(t, master, func(fd int) error {
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
	setSize(t, tty, rows, cols)
	return master, tty
}

// control runs fn with f's descriptor (without os.File.Fd, which would make it blocking).
func control(t *testing.T, f *os.File, fn func(fd int) error) {
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

func setSize(t *testing.T, tty *os.File, rows, cols uint16) {
	t.Helper()
	control(t, tty, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
}

func termios(t *testing.T, tty *os.File) unix.Termios {
	t.Helper()
	var st unix.Termios
	control(t, tty, func(fd int) error {
		p, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if p != nil {
			st = *p
		}
		return err
	})
	return st
}

// TestExecInteractiveTerminal drives kubox exec -it with a terminal, as a person at a shell
// would: the remote sh gets the terminal's size, follows a resize, runs what is typed, and its
// exit code is kubox's; kubox leaves the terminal as it found it.
func TestExecInteractiveTerminal(t *testing.T) {
	f := setup(t).withAgents()
	f.sandbox(t, "box")
	f.serve(t, "box")
	master, tty := openPTY(t, 33, 101)
	before := termios(t, tty)

	screen := &syncBuffer{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(screen, master) // ends when the terminal closes
	}()
	exited := make(chan int, 1)
	go func() {
		exited <- f.kubox(t, tty, tty, tty, "exec", "-it", "box", "--", "sh")
	}()
	typeAndExpect := func(input, want string) {
		t.Helper()
		if _, err := master.WriteString(input); err != nil {
			t.Fatal(err)
		}
		framework.WaitFor(t, time.Minute, func() (bool, string) {
			return strings.Contains(screen.String(), want), fmt.Sprintf("screen %q, want %q", screen.String(), want)
		})
	}
	framework.WaitFor(t, time.Minute, func() (bool, string) {
		return screen.String() != "", "no prompt from the remote sh yet"
	})
	if st := termios(t, tty); st.Lflag&unix.ECHO != 0 || st.Lflag&unix.ICANON != 0 {
		t.Errorf("the local terminal has ECHO or ICANON set during exec -it (lflag %#x); want raw mode", st.Lflag)
	}
	typeAndExpect("stty size\n", "33 101")
	typeAndExpect("echo $((6*7))\n", "42")

	setSize(t, tty, 40, 120)
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, func() (bool, string) {
		if _, err := master.WriteString("stty size\n"); err != nil {
			return false, err.Error()
		}
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(screen.String(), "40 120"), fmt.Sprintf("screen %q, want the new size 40 120", screen.String())
	})

	if _, err := master.WriteString("exit 5\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 5 {
			t.Errorf("kubox exec -it exited %d, want the shell's 5; screen:\n%s", code, screen.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("kubox exec -it did not return after exit 5; screen:\n%s", screen.String())
	}
	if after := termios(t, tty); after != before {
		t.Errorf("the local terminal was not restored: termios %+v, want %+v", after, before)
	}
	_ = master.Close()
	<-copied
}
