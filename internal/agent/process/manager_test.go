package process

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
)

func TestStartStreamsOutputInOrderThenExit(t *testing.T) {
	m := newManager(t, Options{})
	p := mustStart(t, m, Spec{ShellCommand: "echo out1; echo err1 >&2; echo out2; exit 3", Tag: "t"})
	tr := follow(t, p, 0, 0)
	if got, want := string(tr.out[Stdout]), "out1\nout2\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := string(tr.out[Stderr]), "err1\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if tr.exit == nil || tr.exit.Code != 3 || tr.exit.Signal != 0 || tr.exit.TimedOut {
		t.Errorf("exit = %+v, want code 3", tr.exit)
	}
	if last := tr.order[len(tr.order)-1]; last != "exit" {
		t.Errorf("last event = %s, want exit; order %v", last, tr.order)
	}
	// Offsets are contiguous per stream.
	var next [numStreams]int64
	for _, o := range tr.outputs {
		if o.Offset != next[o.Stream] {
			t.Errorf("%s chunk at offset %d, want %d", o.Stream, o.Offset, next[o.Stream])
		}
		next[o.Stream] += int64(len(o.Data))
	}
	if len(tr.dropped) != 0 {
		t.Errorf("dropped %v, want none", tr.dropped)
	}
}

func TestExitStatus(t *testing.T) {
	cases := map[string]struct {
		cmd  string
		want ExitStatus
	}{
		"success":  {cmd: "exit 0", want: ExitStatus{Code: 0}},
		"failure":  {cmd: "exit 42", want: ExitStatus{Code: 42}},
		"sigterm":  {cmd: "kill -TERM $$", want: ExitStatus{Code: 143, Signal: syscall.SIGTERM}},
		"sigkill":  {cmd: "kill -KILL $$", want: ExitStatus{Code: 137, Signal: syscall.SIGKILL}},
		"not-exec": {cmd: "/dev/null", want: ExitStatus{Code: 126}},
	}
	m := newManager(t, Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := exitOf(t, mustStart(t, m, Spec{ShellCommand: tc.cmd}))
			got.At = time.Time{}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("exit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSignalReachesTheWholeGroup(t *testing.T) {
	m := newManager(t, Options{})
	p := mustStart(t, m, Spec{ShellCommand: "sleep 1000 & echo $!; wait"})
	w := watch(t, p)
	sleepPid := firstLineInt(t, w.waitFor(t, "\n"))
	waitRunning(t, sleepPid, "sleep")
	sig, err := ParseSignal("term")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(sig); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if st := exitOf(t, p); st.Signal != syscall.SIGTERM {
		t.Errorf("shell exit = %+v, want SIGTERM", st)
	}
	waitGone(t, sleepPid, "sleep")
	wantCode(t, p.Signal(syscall.SIGTERM), connect.CodeFailedPrecondition, "has exited")
}

func TestStdinThenEOF(t *testing.T) {
	m := newManager(t, Options{})
	p := mustStart(t, m, Spec{Argv: []string{"cat"}, Stdin: true})
	ctx := guardCtx(t)
	if err := p.Input(ctx, []byte("hello "), false); err != nil {
		t.Fatalf("Input: %v", err)
	}
	if !p.Info().StdinOpen {
		t.Error("stdin closed after a write without close")
	}
	if err := p.Input(ctx, []byte("world\n"), true); err != nil {
		t.Fatalf("Input with close: %v", err)
	}
	tr := follow(t, p, 0, 0)
	if got := string(tr.out[Stdout]); got != "hello world\n" {
		t.Errorf("stdout = %q", got)
	}
	if tr.exit.Code != 0 {
		t.Errorf("cat exit = %+v, want 0 (EOF)", tr.exit)
	}
	wantCode(t, p.Input(ctx, []byte("x"), false), connect.CodeFailedPrecondition, "exited")

	noStdin := mustStart(t, m, Spec{Argv: []string{"cat"}})
	if tr := follow(t, noStdin, 0, 0); tr.exit.Code != 0 || len(tr.out[Stdout]) != 0 {
		t.Errorf("cat without stdin: %+v, want an immediate EOF and exit 0", tr)
	}
	sleeper := mustStart(t, m, Spec{Argv: []string{"sleep", "1000"}})
	wantCode(t, sleeper.Input(ctx, []byte("x"), false), connect.CodeFailedPrecondition, "stdin of process")
}

func TestInputUnblocksWhenTheProcessExits(t *testing.T) {
	m := newManager(t, Options{})
	// The process never reads; a write larger than the pipe buffer blocks until the exit closes stdin.
	p := mustStart(t, m, Spec{Argv: []string{"sleep", "1000"}, Stdin: true})
	errc := make(chan error, 1)
	go func() { errc <- p.Input(guardCtx(t), make([]byte, 1<<20), false) }()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		wantCode(t, err, connect.CodeFailedPrecondition, "exited")
	case <-time.After(guard):
		t.Fatal("Input still blocked after the exit")
	}
}

func TestPTY(t *testing.T) {
	m := newManager(t, Options{})
	p := mustStart(t, m, Spec{ShellCommand: "tty; stty size; read x; stty size", PTY: &PTYSize{Rows: 24, Cols: 80}})
	w := watch(t, p)
	out := w.waitFor(t, "24 80")
	if !strings.HasPrefix(out, "/dev/pts/") {
		t.Errorf("tty printed %q, want /dev/pts/N", out)
	}
	if err := p.Resize(PTYSize{Rows: 40, Cols: 100}); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if err := p.Input(guardCtx(t), []byte("\n"), false); err != nil {
		t.Fatalf("Input: %v", err)
	}
	w.waitFor(t, "40 100")
	st := exitOf(t, p)
	if st.Code != 0 {
		t.Errorf("exit = %+v", st)
	}
	info := p.Info()
	if !info.PTY || info.StderrBytes != 0 || info.StdoutBytes == 0 {
		t.Errorf("info = %+v, want a PTY process with all output counted as stdout", info)
	}
	wantCode(t, p.Resize(PTYSize{Rows: 1, Cols: 1}), connect.CodeFailedPrecondition, "exited")

	plain := mustStart(t, m, Spec{Argv: []string{"true"}})
	wantCode(t, plain.Resize(PTYSize{Rows: 1, Cols: 1}), connect.CodeFailedPrecondition, "without a PTY")
}

func TestPTYCloseStdinSendsEOF(t *testing.T) {
	m := newManager(t, Options{})
	p := mustStart(t, m, Spec{Argv: []string{"cat"}, PTY: &PTYSize{Rows: 24, Cols: 80}})
	if err := p.Input(guardCtx(t), []byte("abc\n"), true); err != nil {
		t.Fatalf("Input: %v", err)
	}
	if st := exitOf(t, p); st.Code != 0 {
		t.Errorf("cat on a PTY exit = %+v, want 0 after Ctrl-D", st)
	}
}

func TestTimeoutStopsGrandchildren(t *testing.T) {
	m := newManager(t, Options{})
	p := mustStart(t, m, Spec{ShellCommand: "sleep 1000 & echo $!; wait", Timeout: 300 * time.Millisecond})
	w := watch(t, p)
	sleepPid := firstLineInt(t, w.waitFor(t, "\n"))
	st := exitOf(t, p)
	if !st.TimedOut || st.Signal != syscall.SIGTERM || st.Code != 143 {
		t.Errorf("exit = %+v, want timed out by SIGTERM (the graceful stop's first signal, which ends sh)", st)
	}
	// The background child is gone whether or not it had exec'd sleep yet.
	waitGone(t, sleepPid, "sleep")
	waitGone(t, sleepPid, "sh")
}

func TestOrphansAreReaped(t *testing.T) {
	m := newManager(t, Options{})
	before := m.reaper.orphanCount()
	// The shell exits at once; its background sleep is re-parented to the agent (subreaper).
	p := mustStart(t, m, Spec{ShellCommand: "sleep 0.1 & echo $!; exit 0"})
	tr := follow(t, p, 0, 0)
	if tr.exit.Code != 0 {
		t.Fatalf("exit = %+v", tr.exit)
	}
	sleepPid := firstLineInt(t, string(tr.out[Stdout]))
	waitGone(t, sleepPid, "sleep")
	if got := m.reaper.orphanCount(); got <= before {
		t.Errorf("orphans reaped = %d, want more than %d", got, before)
	}
}

func TestReattachFromOffsets(t *testing.T) {
	const line = "0123456789abcdef" // 16 bytes per chunk
	// The buffer holds the last two stdout chunks and stderr's one byte.
	m := newManager(t, Options{ReplayBytes: 2*len(line) + 1})
	// Each chunk waits for a line on stdin, so every chunk is read on its own.
	p := mustStart(t, m, Spec{
		ShellCommand: fmt.Sprintf("for i in 1 2 3 4 5; do printf %s; read x; done; printf e >&2", line),
		Stdin:        true,
	})
	ctx := guardCtx(t)
	for i := 1; i <= 5; i++ {
		for p.Info().StdoutBytes < int64(i*len(line)) {
			select {
			case <-ctx.Done():
				t.Fatalf("chunk %d never arrived", i)
			case <-time.After(time.Millisecond):
			}
		}
		if err := p.Input(ctx, []byte("\n"), false); err != nil {
			t.Fatal(err)
		}
	}
	exitOf(t, p)
	n := int64(len(line))

	// From 0: the first three chunks left the buffer.
	tr := follow(t, p, 0, 0)
	if diff := cmp.Diff([]Dropped{{Stream: Stdout, Offset: 0, Length: 3 * n}}, tr.dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if got, want := string(tr.out[Stdout]), line+line; got != want {
		t.Errorf("replayed stdout = %q, want %q", got, want)
	}
	if tr.outputs[0].Offset != 3*n {
		t.Errorf("first replayed offset = %d, want %d", tr.outputs[0].Offset, 3*n)
	}

	// From inside the retained part: no gap, no duplicate.
	tr = follow(t, p, 4*n+5, 0)
	if len(tr.dropped) != 0 || string(tr.out[Stdout]) != line[5:] || tr.outputs[0].Offset != 4*n+5 {
		t.Errorf("resume at %d: dropped %v, outputs %+v", 4*n+5, tr.dropped, tr.outputs)
	}
	if string(tr.out[Stderr]) != "e" {
		t.Errorf("stderr = %q, want e", tr.out[Stderr])
	}

	// Fully caught up: only the exit.
	tr = follow(t, p, 5*n, 1)
	if diff := cmp.Diff([]string{"exit"}, tr.order); diff != "" {
		t.Errorf("caught-up events (-want +got):\n%s", diff)
	}

	wantCode(t, p.Follow(ctx, 5*n+1, 0, false, func(Event) error { return nil }), connect.CodeInvalidArgument, "stdout_offset")
	wantCode(t, p.Follow(ctx, 0, -1, false, func(Event) error { return nil }), connect.CodeInvalidArgument, "stderr_offset")
}

func TestRunCapturesAndTruncates(t *testing.T) {
	m := newManager(t, Options{MaxOutputBytes: 1 << 20})
	ctx := guardCtx(t)
	res, err := m.Run(ctx, Spec{ShellCommand: "head -c 5000 /dev/zero; printf err >&2; exit 2"}, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := struct {
		Stdout, Stderr           int
		StdoutBytes, StderrBytes int64
		StdoutTrunc, StderrTrunc bool
		Code                     int
	}{len(res.Stdout), len(res.Stderr), res.StdoutBytes, res.StderrBytes, res.StdoutTruncated, res.StderrTruncated, res.Exit.Code}
	want := got
	want.Stdout, want.Stderr, want.StdoutBytes, want.StderrBytes, want.StdoutTrunc, want.StderrTrunc, want.Code = 1000, 3, 5000, 3, true, false, 2
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}

	res, err = m.Run(ctx, Spec{Argv: []string{"cat"}}, []byte("from stdin"), 0)
	if err != nil || string(res.Stdout) != "from stdin" {
		t.Errorf("cat with stdin: %q, %v", res.Stdout, err)
	}
	_, err = m.Run(ctx, Spec{Argv: []string{"true"}}, nil, 2<<20)
	wantCode(t, err, connect.CodeInvalidArgument, "max_output_bytes")
	_, err = m.Run(ctx, Spec{Argv: []string{"true"}, PTY: &PTYSize{Rows: 1, Cols: 1}}, nil, 0)
	wantCode(t, err, connect.CodeInvalidArgument, "pty")
}

func TestRunStopsOnCancel(t *testing.T) {
	m := newManager(t, Options{})
	ctx, cancel := context.WithCancel(guardCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := m.Run(ctx, Spec{Argv: []string{"sleep", "1000"}, Tag: "cancel-me"}, nil, 0)
		errc <- err
	}()
	var p *Process
	for p == nil {
		for _, info := range m.List(false) {
			if info.Tag == "cancel-me" {
				p, _ = m.Get(info.ID)
			}
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wantCode(t, <-errc, connect.CodeCanceled, "stopped")
	if st := exitOf(t, p); st.Signal != syscall.SIGTERM {
		t.Errorf("exit = %+v, want SIGTERM (the graceful stop's first signal, which ends sleep)", st)
	}
}

func TestMaxProcesses(t *testing.T) {
	m := newManager(t, Options{MaxProcesses: 2})
	a := mustStart(t, m, Spec{Argv: []string{"sleep", "1000"}})
	mustStart(t, m, Spec{Argv: []string{"sleep", "1000"}})
	_, err := m.Start(Spec{Argv: []string{"sleep", "1000"}})
	wantCode(t, err, connect.CodeResourceExhausted, "maximum")
	if err := a.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exitOf(t, a)
	mustStart(t, m, Spec{Argv: []string{"true"}})
}

func TestInvalidSpecs(t *testing.T) {
	file, err := os.CreateTemp(t.TempDir(), "notadir")
	if err != nil {
		t.Fatal(err)
	}
	_ = file.Close()
	cases := map[string]struct {
		spec  Spec
		field string
	}{
		"empty":          {spec: Spec{}, field: "spec.argv is empty"},
		"both":           {spec: Spec{Argv: []string{"ls"}, ShellCommand: "ls"}, field: "either argv or shell_command"},
		"empty program":  {spec: Spec{Argv: []string{""}}, field: "spec.argv[0]"},
		"not found":      {spec: Spec{Argv: []string{"no-such-program-kubox"}}, field: "not found in PATH"},
		"missing cwd":    {spec: Spec{Argv: []string{"ls"}, Dir: "/no/such/dir"}, field: "spec.cwd"},
		"cwd not a dir":  {spec: Spec{Argv: []string{"ls"}, Dir: file.Name()}, field: "not a directory"},
		"bad env name":   {spec: Spec{Argv: []string{"ls"}, Env: map[string]string{"A=B": "c"}}, field: "spec.env"},
		"neg timeout":    {spec: Spec{Argv: []string{"ls"}, Timeout: -time.Second}, field: "spec.timeout"},
		"nul in argv":    {spec: Spec{Argv: []string{"ls", "a\x00b"}}, field: "spec.argv[1]"},
		"zero pty":       {spec: Spec{Argv: []string{"ls"}, PTY: &PTYSize{}}, field: "pty"},
		"not executable": {spec: Spec{Argv: []string{file.Name()}}, field: "not executable"},
	}
	m := newManager(t, Options{})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := m.Start(tc.spec)
			wantCode(t, err, connect.CodeInvalidArgument, tc.field)
		})
	}
}

func TestEnvAndCwd(t *testing.T) {
	m := newManager(t, Options{Env: []string{"PATH=" + os.Getenv("PATH"), "KEEP=base", "OVER=base"}})
	dir := t.TempDir()
	res, err := m.Run(guardCtx(t), Spec{
		ShellCommand: `printf '%s %s %s %s' "$KEEP" "$OVER" "$NEW" "$(pwd)"`,
		Env:          map[string]string{"OVER": "set", "NEW": "new"},
		Dir:          dir,
	}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Stdout), "base set new "+dir; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

// TestEnvironIsReadAtEachStart checks that Options.Environ, which a claim's settings change
// while the agent runs, is the base of each new process, and that the main process keeps Env.
func TestEnvironIsReadAtEachStart(t *testing.T) {
	base := []string{"PATH=" + os.Getenv("PATH"), "SETTING=before"}
	var mu sync.Mutex
	current := base
	m := newManager(t, Options{Env: base, Environ: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return current
	}})
	echo := func() string {
		t.Helper()
		res, err := m.Run(guardCtx(t), Spec{ShellCommand: `printf %s "$SETTING"`}, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Stdout)
	}
	if got := echo(); got != "before" {
		t.Errorf("before the change: SETTING = %q, want %q", got, "before")
	}
	mu.Lock()
	current = []string{"PATH=" + os.Getenv("PATH"), "SETTING=after"}
	mu.Unlock()
	if got := echo(); got != "after" {
		t.Errorf("after the change: SETTING = %q, want %q", got, "after")
	}
	out, err := os.CreateTemp(t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	main, err := m.StartMain(MainSpec{Argv: []string{"/bin/sh", "-c", `printf %s "$SETTING"`}, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	<-main.Done()
	if b, _ := os.ReadFile(out.Name()); string(b) != "before" {
		t.Errorf("main process: SETTING = %q, want Options.Env's %q", b, "before")
	}
}

func TestListAndGet(t *testing.T) {
	m := newManager(t, Options{})
	running := mustStart(t, m, Spec{Argv: []string{"sleep", "1000"}, Tag: "running"})
	done := mustStart(t, m, Spec{Argv: []string{"true"}, Tag: "done"})
	exitOf(t, done)
	tags := func(infos []Info) []string {
		var out []string
		for _, i := range infos {
			out = append(out, i.Tag)
		}
		return out
	}
	if diff := cmp.Diff([]string{"running"}, tags(m.List(false))); diff != "" {
		t.Errorf("List(false) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"running", "done"}, tags(m.List(true))); diff != "" {
		t.Errorf("List(true) (-want +got):\n%s", diff)
	}
	info := m.List(false)[0]
	if info.ID != running.ID() || info.PID != running.PID() || info.Argv[0] != "sleep" || info.Exit != nil {
		t.Errorf("info = %+v", info)
	}
	_, err := m.Get("nope")
	wantCode(t, err, connect.CodeNotFound, `"nope"`)
}

func TestExitedProcessesArePruned(t *testing.T) {
	m := newManager(t, Options{MaxExited: 1})
	first := mustStart(t, m, Spec{Argv: []string{"true"}})
	exitOf(t, first)
	exitOf(t, mustStart(t, m, Spec{Argv: []string{"true"}}))
	_, err := m.Get(first.ID())
	wantCode(t, err, connect.CodeNotFound, first.ID())
	if n := len(m.List(true)); n != 1 {
		t.Errorf("listed %d exited processes, want 1", n)
	}
}

func TestStartMain(t *testing.T) {
	m := newManager(t, Options{})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := m.StartMain(MainSpec{Argv: []string{"sh", "-c", "echo to the log; exit 7"}, Stdout: w})
	_ = w.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, _ := r.Read(buf)
	if got := string(buf[:n]); got != "to the log\n" {
		t.Errorf("main wrote %q to its stdout", got)
	}
	if st := exitOf(t, p); st.Code != 7 {
		t.Errorf("main exit = %+v, want 7", st)
	}
	infos := m.List(true)
	if len(infos) != 1 || !infos[0].Main || infos[0].Tag != "main" {
		t.Errorf("List = %+v, want the main process", infos)
	}
	wantCode(t, p.Follow(guardCtx(t), 0, 0, false, func(Event) error { return nil }), connect.CodeFailedPrecondition, "container log")
	_, err = m.StartMain(MainSpec{})
	wantCode(t, err, connect.CodeInvalidArgument, "--")
}

func TestShutdownEscalatesToSIGKILL(t *testing.T) {
	m, err := New(Options{ShutdownGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	polite := mustStart(t, m, Spec{Argv: []string{"sleep", "1000"}})
	// The shell and its sleep ignore SIGTERM (ignored signals survive exec).
	stubborn := mustStart(t, m, Spec{ShellCommand: `trap "" TERM; echo ready; sleep 1000`})
	watch(t, stubborn).waitFor(t, "ready")
	if err := m.Shutdown(guardCtx(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st := polite.Exit(); st.Signal != syscall.SIGTERM {
		t.Errorf("sleep exit = %+v, want SIGTERM", st)
	}
	if st := stubborn.Exit(); st.Signal != syscall.SIGKILL {
		t.Errorf("stubborn exit = %+v, want SIGKILL", st)
	}
	_, err = m.Start(Spec{Argv: []string{"true"}})
	wantCode(t, err, connect.CodeUnavailable, "shutting down")
}

func TestParseSignal(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    syscall.Signal
		wantErr string
	}{
		"full name":    {in: "SIGTERM", want: syscall.SIGTERM},
		"short":        {in: "int", want: syscall.SIGINT},
		"number":       {in: "9", want: syscall.SIGKILL},
		"hup":          {in: " SigHup ", want: syscall.SIGHUP},
		"realtime":     {in: "40", want: syscall.Signal(40)},
		"empty":        {in: "", wantErr: "empty"},
		"unknown":      {in: "SIGFOO", wantErr: "unknown signal"},
		"out of range": {in: "99", wantErr: "1 to 64"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSignal(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSignal(%q) = %v, %v; want error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseSignal(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}
