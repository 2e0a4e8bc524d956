//go:build linux

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

	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestExecInteractiveTerminal drives kubox exec -it with a terminal, as a person at a shell
// would: the remote sh gets the terminal's size, follows a resize, runs what is typed, and its
// exit code is kubox's; kubox leaves the terminal as it found it.
func TestExecInteractiveTerminal(t *testing.T) {
	f := setup(t).withAgents()
	f.sandbox(t, "box")
	f.serve(t, "box")
	master, tty := testutil.OpenPTY(t, 33, 101)
	before := testutil.Termios(t, tty)

	screen := &testutil.SyncBuffer{}
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
	if st := testutil.Termios(t, tty); st.Lflag&unix.ECHO != 0 || st.Lflag&unix.ICANON != 0 {
		t.Errorf("the local terminal has ECHO or ICANON set during exec -it (lflag %#x); want raw mode", st.Lflag)
	}
	typeAndExpect("stty size\n", "33 101")
	typeAndExpect("echo $((6*7))\n", "42")

	testutil.SetPTYSize(t, tty, 40, 120)
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
	if after := testutil.Termios(t, tty); after != before {
		t.Errorf("the local terminal was not restored: termios %+v, want %+v", after, before)
	}
	_ = master.Close()
	<-copied
}
