package process

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReaperAndOtherChildren: a reaper that waits for the agent's own children only (an agent
// embedded in a process that also runs and waits for children of its own, as the integration
// tests do) reaps the processes it started and leaves every other child's exit status to
// exec.Cmd.Wait; a reaper that waits for every child (the agent as PID 1 or subreaper) takes it,
// and Wait fails with ECHILD ("waitid: no child processes"). Each case runs in a process of its
// own, where no other reaper runs.
func TestReaperAndOtherChildren(t *testing.T) {
	if mode := os.Getenv("KUBOX_REAPER_CASE"); mode != "" {
		reaperCase(t, mode == "own")
		return
	}
	for name, mode := range map[string]string{"own children only": "own", "every child": "all"} {
		t.Run(name, func(t *testing.T) {
			out, err := runSelf(t, "^TestReaperAndOtherChildren$", "KUBOX_REAPER_CASE="+mode)
			if err != nil {
				t.Fatalf("the %s case: %v\n%s", mode, err, out)
			}
		})
	}
}

// reaperCase starts a child with exec.Cmd and one through a reaper, lets both exit, has the
// reaper reap, and checks what Wait gets.
func reaperCase(t *testing.T, ownOnly bool) {
	r := newReaperState(ownOnly)
	other := exec.Command("true")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan unix.WaitStatus, 1)
	own := exec.Command("true")
	pid, err := r.spawn(func() (int, error) {
		if err := own.Start(); err != nil {
			return 0, err
		}
		return own.Process.Pid, nil
	}, func(ws unix.WaitStatus) { reaped <- ws })
	if err != nil {
		t.Fatal(err)
	}
	exited(t, other.Process.Pid)
	exited(t, pid)
	r.reapAll()
	select {
	case ws := <-reaped:
		if !ws.Exited() || ws.ExitStatus() != 0 {
			t.Errorf("the reaper's own child: status %v, want exit 0", ws)
		}
	default:
		t.Error("the reaper did not reap the child it started")
	}
	err = other.Wait()
	switch {
	case ownOnly && err != nil:
		t.Errorf("exec.Cmd.Wait of a child the reaper did not start: %v; want its exit status, left to it", err)
	case !ownOnly && !errors.Is(err, unix.ECHILD):
		t.Errorf("exec.Cmd.Wait of a child a reaper of every child reaped: %v; want ECHILD", err)
	}
}

// exited waits until child pid has exited, leaving its zombie for whoever reaps it.
func exited(t *testing.T, pid int) {
	t.Helper()
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				t.Fatalf("waiting for child %d to exit: %v", pid, err)
			}
			return
		}
	}
}

// runSelf runs the test binary's tests matching run in a new process with env added, through the
// package's reaper (another test may have started it: it would take the status from exec.Cmd), and
// returns its output.
func runSelf(t *testing.T, run string, env ...string) (string, error) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), env...), f, f
	done := make(chan unix.WaitStatus, 1)
	if _, err := startReaper().spawn(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}, func(ws unix.WaitStatus) { done <- ws }); err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	select {
	case ws = <-done:
	case <-time.After(guard):
		_ = cmd.Process.Kill()
		ws = <-done
	}
	b, _ := os.ReadFile(f.Name())
	if !ws.Exited() || ws.ExitStatus() != 0 || !strings.Contains(string(b), "\nPASS") {
		return string(b), errors.New("the test process failed: " + strings.TrimSpace(string(b[max(0, len(b)-200):])))
	}
	return string(b), nil
}
