package e2b_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
)

// A command's stdout and stderr arrive as their own data events, then its exit code in the end
// event, as E2B's commands.run reads them.
func TestStartStreamsOutputAndTheExitCode(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	stream, err := s.proc.Start(ctx, connect.NewRequest(&envdprocess.StartRequest{
		Process: shell("echo out; echo err >&2; pwd; echo $GREETING; exit 3"),
		Tag:     new("run"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	ev := startEvents(stream)
	ev.pid(t)
	var o output
	ev.finish(t, &o)
	if got, want := o.stdout.String(), "out\n"+s.root+"\n\n"; got != want {
		t.Errorf("stdout %q, want %q (the agent's working directory, no GREETING)", got, want)
	}
	if got := o.stderr.String(); got != "err\n" {
		t.Errorf("stderr %q, want %q", got, "err\n")
	}
	if o.end.GetExitCode() != 3 || !o.end.GetExited() || o.end.GetStatus() != "exit status 3" || o.end.GetError() != "exit status 3" {
		t.Errorf("end event %v, want exit code 3, exited, status and error \"exit status 3\"", o.end)
	}
}

// cwd and envs reach the process; a cwd outside the agent's root is refused.
func TestStartTakesCwdAndEnvs(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	s.write(t, "work/marker", "x")
	cfg := shell("pwd; echo $GREETING")
	cfg.Cwd, cfg.Envs = new("/work"), map[string]string{"GREETING": "hello"}
	stream, err := s.proc.Start(ctx, connect.NewRequest(&envdprocess.StartRequest{Process: cfg}))
	if err != nil {
		t.Fatal(err)
	}
	ev := startEvents(stream)
	ev.pid(t)
	var o output
	ev.finish(t, &o)
	if got, want := o.stdout.String(), s.root+"/work\nhello\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}

	if err := os.Symlink("/", filepath.Join(s.root, "out")); err != nil {
		t.Fatal(err)
	}
	cfg.Cwd = new("/out/tmp")
	if err := startError(ctx, s, &envdprocess.StartRequest{Process: cfg}); codeOf(err) != connect.CodePermissionDenied {
		t.Errorf("Start with a cwd through a link out of the root: %v, want permission_denied", err)
	}
	if err := startError(ctx, s, &envdprocess.StartRequest{Process: &envdprocess.ProcessConfig{}}); codeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("Start without cmd: %v, want invalid_argument", err)
	}
}

// startError is the error of a Start that must fail, which a server stream reports on its first read.
func startError(ctx context.Context, s *sandbox, req *envdprocess.StartRequest) error {
	st, err := s.proc.Start(ctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	for st.Receive() {
	}
	return st.Err()
}

// Output streams while the command runs, and SendInput writes to its stdin.
func TestOutputStreamsAndSendInputReachesStdin(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	stream, err := s.proc.Start(ctx, connect.NewRequest(&envdprocess.StartRequest{
		Process: shell("echo ready; read line; echo got $line"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	ev := startEvents(stream)
	pid := ev.pid(t)
	var o output
	ev.until(t, &o, "ready\n") // before any input: the output was streamed, not sent at the end
	if o.end != nil {
		t.Fatalf("the command ended before its input: %v", o.end)
	}
	if _, err := s.proc.SendInput(ctx, connect.NewRequest(&envdprocess.SendInputRequest{Process: pidOf(pid),
		Input: &envdprocess.ProcessInput{Input: &envdprocess.ProcessInput_Stdin{Stdin: []byte("hello\n")}}})); err != nil {
		t.Fatalf("SendInput: %v", err)
	}
	ev.finish(t, &o)
	if got := o.stdout.String(); got != "ready\ngot hello\n" {
		t.Errorf("stdout %q, want %q", got, "ready\ngot hello\n")
	}
	if o.end.GetExitCode() != 0 || !o.end.GetExited() || o.end.Error != nil {
		t.Errorf("end %v, want exit code 0 and no error", o.end)
	}
}

// StreamInput writes a client stream of input in order, and CloseStdin ends the process's input.
func TestStreamInputAndCloseStdin(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	stream, err := s.proc.Start(ctx, connect.NewRequest(&envdprocess.StartRequest{
		Process: &envdprocess.ProcessConfig{Cmd: "cat"}, Tag: new("cat"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	ev := startEvents(stream)
	ev.pid(t)
	in := s.proc.StreamInput(ctx)
	tag := &envdprocess.ProcessSelector{Selector: &envdprocess.ProcessSelector_Tag{Tag: "cat"}}
	msgs := []*envdprocess.StreamInputRequest{
		{Event: &envdprocess.StreamInputRequest_Start{Start: &envdprocess.StreamInputRequest_StartEvent{Process: tag}}},
	}
	for _, chunk := range []string{"one ", "two ", "three"} {
		msgs = append(msgs, &envdprocess.StreamInputRequest{Event: &envdprocess.StreamInputRequest_Data{
			Data: &envdprocess.StreamInputRequest_DataEvent{Input: &envdprocess.ProcessInput{
				Input: &envdprocess.ProcessInput_Stdin{Stdin: []byte(chunk)}}}}})
	}
	for _, m := range msgs {
		if err := in.Send(m); err != nil {
			t.Fatalf("StreamInput send: %v", err)
		}
	}
	if _, err := in.CloseAndReceive(); err != nil {
		t.Fatalf("StreamInput: %v", err)
	}
	var o output
	ev.until(t, &o, "one two three")
	if _, err := s.proc.CloseStdin(ctx, connect.NewRequest(&envdprocess.CloseStdinRequest{Process: tag})); err != nil {
		t.Fatalf("CloseStdin: %v", err)
	}
	ev.finish(t, &o) // cat exits only once its stdin is closed
	if _, err := s.proc.CloseStdin(ctx, connect.NewRequest(&envdprocess.CloseStdinRequest{Process: tag})); codeOf(err) != connect.CodeNotFound {
		t.Errorf("CloseStdin after the process exited: %v, want not_found", err)
	}
	if got := o.stdout.String(); got != "one two three" || o.end.GetExitCode() != 0 {
		t.Errorf("stdout %q, end %v; want %q and exit code 0", got, o.end, "one two three")
	}
}

// A background command outlives the stream that started it: List shows it, Connect by tag
// follows it, SendSignal kills it, and then it is gone.
func TestBackgroundCommandConnectedToAndKilled(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	startCtx, disconnect := context.WithCancel(ctx)
	stream, err := s.proc.Start(startCtx, connect.NewRequest(&envdprocess.StartRequest{
		Process: shell("while :; do echo tick; sleep 0.05; done"), Tag: new("bg"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	pid := startEvents(stream).pid(t)
	disconnect()
	_ = stream.Close()

	list, err := s.proc.List(ctx, connect.NewRequest(&envdprocess.ListRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Msg.GetProcesses(), func(p *envdprocess.ProcessInfo) bool { return p.GetPid() == pid })
	if i < 0 {
		t.Fatalf("List after the client disconnected: %v, want pid %d still running", list.Msg.GetProcesses(), pid)
	}
	if p := list.Msg.GetProcesses()[i]; p.GetTag() != "bg" || p.GetConfig().GetCmd() != "/bin/sh" {
		t.Errorf("List describes the process as %v, want tag bg and cmd /bin/sh", p)
	}

	conn, err := s.proc.Connect(ctx, connect.NewRequest(&envdprocess.ConnectRequest{
		Process: &envdprocess.ProcessSelector{Selector: &envdprocess.ProcessSelector_Tag{Tag: "bg"}}}))
	if err != nil {
		t.Fatal(err)
	}
	ev := connectEvents(conn)
	if got := ev.pid(t); got != pid {
		t.Fatalf("Connect by tag reports pid %d, want %d", got, pid)
	}
	var o output
	ev.until(t, &o, "tick\n") // still running, followed anew
	if _, err := s.proc.SendSignal(ctx, connect.NewRequest(&envdprocess.SendSignalRequest{
		Process: pidOf(pid), Signal: envdprocess.Signal_SIGNAL_SIGKILL})); err != nil {
		t.Fatalf("SendSignal: %v", err)
	}
	ev.finish(t, &o)
	if o.end.GetExited() || o.end.GetExitCode() != -1 || o.end.GetStatus() != "signal: killed" || o.end.GetError() != "signal: killed" {
		t.Errorf("end after SIGKILL %v, want exited false, exit code -1, status and error \"signal: killed\"", o.end)
	}

	for deadline := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
		_, err = s.proc.SendInput(ctx, connect.NewRequest(&envdprocess.SendInputRequest{Process: pidOf(pid),
			Input: &envdprocess.ProcessInput{Input: &envdprocess.ProcessInput_Stdin{Stdin: []byte("x")}}}))
		if codeOf(err) == connect.CodeNotFound || time.Now().After(deadline) {
			break
		}
	}
	if codeOf(err) != connect.CodeNotFound {
		t.Errorf("SendInput to the killed process: %v, want not_found", err)
	}
	c, err := s.proc.Connect(ctx, connect.NewRequest(&envdprocess.ConnectRequest{Process: pidOf(pid)}))
	if err == nil {
		c.Receive()
		err = c.Err()
	}
	if codeOf(err) != connect.CodeNotFound {
		t.Errorf("Connect to the killed process: %v, want not_found", err)
	}
}

// A process on a PTY sends its output as pty data, reads pty input, and sees a resize by Update.
func TestPTYWithResize(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	stream, err := s.proc.Start(ctx, connect.NewRequest(&envdprocess.StartRequest{
		Process: shell(`stty size; echo go; read line; stty size; echo "line=$line"`),
		Pty:     &envdprocess.PTY{Size: &envdprocess.PTY_Size{Cols: 80, Rows: 24}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	ev := startEvents(stream)
	pid := ev.pid(t)
	var o output
	ev.until(t, &o, "go")
	if _, err := s.proc.Update(ctx, connect.NewRequest(&envdprocess.UpdateRequest{Process: pidOf(pid),
		Pty: &envdprocess.PTY{Size: &envdprocess.PTY_Size{Cols: 120, Rows: 40}}})); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := s.proc.SendInput(ctx, connect.NewRequest(&envdprocess.SendInputRequest{Process: pidOf(pid),
		Input: &envdprocess.ProcessInput{Input: &envdprocess.ProcessInput_Pty{Pty: []byte("hi\r")}}})); err != nil {
		t.Fatalf("SendInput: %v", err)
	}
	ev.finish(t, &o)
	out := strings.ReplaceAll(o.pty.String(), "\r\n", "\n")
	for _, want := range []string{"24 80\n", "40 120\n", "line=hi\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal's output %q lacks %q", out, want)
		}
	}
	if o.stdout.Len() != 0 || o.stderr.Len() != 0 {
		t.Errorf("a PTY process sent stdout %q and stderr %q; want its output as pty data only", &o.stdout, &o.stderr)
	}
	if _, err := s.proc.Update(ctx, connect.NewRequest(&envdprocess.UpdateRequest{Process: pidOf(pid),
		Pty: &envdprocess.PTY{Size: &envdprocess.PTY_Size{}}})); codeOf(err) == connect.CodeUnknown || err == nil {
		t.Errorf("Update with a zero size: %v, want an error with a code", err)
	}
}

// With Keepalive-Ping-Interval, a quiet stream gets keepalive events.
func TestKeepalivesOnAQuietStream(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	req := connect.NewRequest(&envdprocess.StartRequest{Process: shell("sleep 2.5; echo done")})
	req.Header().Set("Keepalive-Ping-Interval", "1")
	stream, err := s.proc.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ev := startEvents(stream)
	ev.pid(t)
	var o output
	ev.finish(t, &o)
	if o.keepalives == 0 || o.stdout.String() != "done\n" {
		t.Errorf("%d keepalives and stdout %q in 2.5 s of silence at a 1 s interval; want at least one, then %q",
			o.keepalives, &o.stdout, "done\n")
	}
}

// The call's timeout is the command's, as E2B's commands.run timeoutMs: the process is killed
// when it passes, and nothing is left running.
func TestTheCallTimeoutKillsTheCommand(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	callCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	stream, err := s.proc.Start(callCtx, connect.NewRequest(&envdprocess.StartRequest{Process: shell("sleep 60")}))
	if err != nil {
		t.Fatal(err)
	}
	pid := startEvents(stream).pid(t)
	for stream.Receive() {
	}
	if codeOf(stream.Err()) != connect.CodeDeadlineExceeded {
		t.Errorf("the stream ended with %v, want deadline_exceeded", stream.Err())
	}
	for deadline := time.Now().Add(guard); ; time.Sleep(20 * time.Millisecond) {
		list, err := s.proc.List(ctx, connect.NewRequest(&envdprocess.ListRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list.Msg.GetProcesses(), func(p *envdprocess.ProcessInfo) bool { return p.GetPid() == pid }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs after its call's timeout", pid)
		}
	}
}
