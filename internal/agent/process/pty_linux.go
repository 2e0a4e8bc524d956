package process

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY opens a new pseudo-terminal of the given size: the master, which the agent reads and
// writes, and the terminal the process gets. The master stays non-blocking (it is driven by Go's
// poller through SyscallConn, never Fd), so a read can be given a deadline and a close wakes it.
func openPTY(size PTYSize) (master, tty *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open a PTY: %w", err)
	}
	var n uint32
	err = control(master, func(fd int) error {
		var err error
		if n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN); err != nil {
			return err
		}
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return err
		}
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
	if err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("set up the PTY: %w", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("open the PTY's terminal: %w", err)
	}
	return master, tty, nil
}

// setPTYSize resizes the terminal of master; the kernel sends SIGWINCH to its foreground group.
func setPTYSize(master *os.File, size PTYSize) error {
	return control(master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
}

// control runs fn on f's descriptor without switching f to blocking mode (as f.Fd would).
func control(f *os.File, fn func(fd int) error) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := sc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
