package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The reaper lives as long as the OS process, by design, and os/signal's loop with it.
		goleak.IgnoreTopFunction("github.com/kubox-dev/kubox/internal/agent/process.(*reaper).loop"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreAnyFunction("os/signal.loop"),
	)
}

// guard bounds every wait in these tests; it only turns a hang into a failure.
const guard = 30 * time.Second

func guardCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// newManager returns a Manager whose processes are all stopped when the test ends.
func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return m
}

func mustStart(t *testing.T, m *Manager, spec Spec) *Process {
	t.Helper()
	p, err := m.Start(spec)
	if err != nil {
		t.Fatalf("Start(%+v): %v", spec, err)
	}
	return p
}

// transcript is what a follower received.
type transcript struct {
	out     [numStreams][]byte
	dropped []Dropped
	outputs []Output
	exit    *ExitStatus
	// order is the event kinds in order: "out", "drop", "exit".
	order []string
}

// follow follows p from the offsets until its exit.
func follow(t *testing.T, p *Process, stdoutOffset, stderrOffset int64) transcript {
	t.Helper()
	var tr transcript
	err := p.Follow(guardCtx(t), stdoutOffset, stderrOffset, false, func(ev Event) error {
		switch {
		case ev.Output != nil:
			tr.out[ev.Output.Stream] = append(tr.out[ev.Output.Stream], ev.Output.Data...)
			tr.outputs = append(tr.outputs, *ev.Output)
			tr.order = append(tr.order, "out")
		case ev.Dropped != nil:
			tr.dropped = append(tr.dropped, *ev.Dropped)
			tr.order = append(tr.order, "drop")
		case ev.Exit != nil:
			tr.exit = ev.Exit
			tr.order = append(tr.order, "exit")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	return tr
}

// watcher follows a process in the background so a test can wait for output to appear.
type watcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	exit *ExitStatus
	wake chan struct{}
	done chan error
}

func watch(t *testing.T, p *Process) *watcher {
	t.Helper()
	w := &watcher{wake: make(chan struct{}, 1), done: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	go func() {
		w.done <- p.Follow(ctx, 0, 0, false, func(ev Event) error {
			w.mu.Lock()
			if ev.Output != nil {
				w.buf.Write(ev.Output.Data)
			}
			if ev.Exit != nil {
				w.exit = ev.Exit
			}
			w.mu.Unlock()
			select {
			case w.wake <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		// The Manager's cleanup (registered earlier, so run later) stops the process; a test that
		// ends before it does stops following here.
		cancel()
		if err := <-w.done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("following process %s: %v", p.ID(), err)
		}
	})
	return w
}

// waitFor waits until the output contains s and returns the output so far.
func (w *watcher) waitFor(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(guard)
	for {
		w.mu.Lock()
		out := w.buf.String()
		w.mu.Unlock()
		if strings.Contains(out, s) {
			return out
		}
		select {
		case <-w.wake:
		case <-deadline:
			t.Fatalf("output never contained %q; got %q", s, out)
		}
	}
}

func wantCode(t *testing.T, err error, code connect.Code, msgHas string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	if got := connect.CodeOf(err); got != code {
		t.Fatalf("got code %v (%v), want %v", got, err, code)
	}
	if !strings.Contains(err.Error(), msgHas) {
		t.Fatalf("error %q does not mention %q", err, msgHas)
	}
}

func exitOf(t *testing.T, p *Process) ExitStatus {
	t.Helper()
	st, err := p.Wait(guardCtx(t))
	if err != nil {
		t.Fatalf("process %s did not exit: %v", p.ID(), err)
	}
	return st
}

// procState is the state letter of pid in /proc ("Z" for a zombie), or "" when there is no such
// process. comm must match, so a reused pid does not count.
func procState(pid int, comm string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	open, closeParen := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closeParen < open || s[open+1:closeParen] != comm {
		return ""
	}
	return strings.Fields(s[closeParen+1:])[0]
}

// waitGone waits until pid (named comm) is neither running nor a zombie.
func waitGone(t *testing.T, pid int, comm string) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for procState(pid, comm) != "" {
		if time.Now().After(deadline) {
			t.Fatalf("process %d (%s) still exists in state %s", pid, comm, procState(pid, comm))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitRunning waits until pid runs comm (a forked child execs a moment after its shell prints $!).
func waitRunning(t *testing.T, pid int, comm string) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for procState(pid, comm) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("process %d never ran %s", pid, comm)
		}
		time.Sleep(time.Millisecond)
	}
}

// firstLineInt parses the first line of out as a number (a pid printed with `echo $!`).
func firstLineInt(t *testing.T, out string) int {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("first line of %q is not a number: %v", out, err)
	}
	return n
}
