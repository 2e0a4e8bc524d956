package conformance

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
)

// sandboxd's gRPC method paths, as its SDKs call them.
const (
	methodStart      = "/process.v1.ProcessService/Start"
	methodExecute    = "/process.v1.ProcessService/Execute"
	methodWriteStdin = "/process.v1.ProcessService/WriteStdin"
	methodSendSignal = "/process.v1.ProcessService/SendSignal"
	methodResizeTTY  = "/process.v1.ProcessService/ResizeTTY"
	methodWatchDir   = "/watcher.v1.FileWatcherService/WatchDir"
)

var serverStream = &grpc.StreamDesc{ServerStreams: true}

func TestExecuteRunsACommand(t *testing.T) {
	s := startSandbox(t)
	res := &processv1.ExecuteResponse{}
	err := s.conn.Invoke(guardCtx(t), methodExecute, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{
		Command: []string{"sh", "-c", `echo "$WHO"; pwd; echo oops >&2; exit 7`}, EnvVars: map[string]string{"WHO": "agent-sandbox"},
	}}, res)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if got, want := string(res.GetStdout()), "agent-sandbox\n"+s.root+"\n"; got != want {
		t.Errorf("stdout %q, want %q (the variable, then the sandbox root as the working directory)", got, want)
	}
	if string(res.GetStderr()) != "oops\n" || res.GetExitCode() != 7 {
		t.Errorf("stderr %q, exit code %d; want %q and 7", res.GetStderr(), res.GetExitCode(), "oops\n")
	}
}

func TestTheGRPCPortNeedsTheToken(t *testing.T) {
	s := startSandbox(t)
	err := s.anon.Invoke(guardCtx(t), methodExecute, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{Command: []string{"true"}}},
		&processv1.ExecuteResponse{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Execute without the token: %v, want Unauthenticated", err)
	}
}

// proc is a process started with Start, read through its stream.
type proc struct {
	id     int32
	stream grpc.ClientStream
	// stderr collects what readUntil read of stderr, for finish.
	stderr *strings.Builder
}

func start(t *testing.T, ctx context.Context, s *sandbox, req *processv1.StartRequest) proc {
	t.Helper()
	stream, err := s.conn.NewStream(ctx, serverStream, methodStart)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := stream.SendMsg(req); err != nil {
		t.Fatalf("Start: sending the request: %v", err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	first := &processv1.StartResponse{}
	if err := stream.RecvMsg(first); err != nil {
		t.Fatalf("Start: the first event: %v", err)
	}
	if first.GetInit() == nil {
		t.Fatalf("Start's first event is %v, want the InitEvent", first)
	}
	return proc{id: first.GetInit().GetProcessId(), stream: stream, stderr: &strings.Builder{}}
}

// readUntil reads stdout until it contains want.
func (p proc) readUntil(t *testing.T, want string) string {
	t.Helper()
	var out strings.Builder
	for !strings.Contains(out.String(), want) {
		ev := &processv1.StartResponse{}
		if err := p.stream.RecvMsg(ev); err != nil {
			t.Fatalf("the stream ended (%v) before stdout %q contained %q", err, out.String(), want)
		}
		out.Write(ev.GetStdout())
		p.stderr.Write(ev.GetStderr())
	}
	return out.String()
}

// finish reads the stream to its end: stdout, stderr and the exit code.
func (p proc) finish(t *testing.T) (string, string, int32) {
	t.Helper()
	var stdout strings.Builder
	stderr := p.stderr
	var exit *processv1.ExitEvent
	for {
		ev := &processv1.StartResponse{}
		err := p.stream.RecvMsg(ev)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Start stream: %v", err)
			}
			break
		}
		if exit != nil {
			t.Fatalf("event %v after the ExitEvent", ev)
		}
		stdout.Write(ev.GetStdout())
		stderr.Write(ev.GetStderr())
		exit = ev.GetExit()
	}
	if exit == nil {
		t.Fatal("the Start stream ended without an ExitEvent")
	}
	return stdout.String(), stderr.String(), exit.GetExitCode()
}

func (s *sandbox) invoke(t *testing.T, method string, req, res any) {
	t.Helper()
	if err := s.conn.Invoke(guardCtx(t), method, req, res); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func TestStartStreamsStdinAndASignalEndsIt(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	// The shell echoes its input, then waits for a signal; SIGTERM ends it with 128+15.
	p := start(t, ctx, s, &processv1.StartRequest{Config: &processv1.ProcessConfig{
		Command: []string{"sh", "-c", `echo ready >&2; read line; echo "got $line"; exec sleep 30`},
	}})
	s.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Input{Input: []byte("hello\n")}}, &processv1.WriteStdinResponse{})
	p.readUntil(t, "got hello")
	s.invoke(t, methodSendSignal, &processv1.SendSignalRequest{ProcessId: p.id, Signal: processv1.Signal_SIGNAL_SIGTERM},
		&processv1.SendSignalResponse{})
	_, stderr, code := p.finish(t)
	if code != 128+15 {
		t.Errorf("exit code %d after SIGTERM, want 143 (128+15)", code)
	}
	if stderr != "ready\n" {
		t.Errorf("stderr %q, want %q", stderr, "ready\n")
	}
}

func TestStdinEOF(t *testing.T) {
	s := startSandbox(t)
	p := start(t, guardCtx(t), s, &processv1.StartRequest{Config: &processv1.ProcessConfig{Command: []string{"wc", "-c"}}})
	s.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Input{Input: []byte("12345")}}, &processv1.WriteStdinResponse{})
	s.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Eof{Eof: &emptypb.Empty{}}}, &processv1.WriteStdinResponse{})
	stdout, _, code := p.finish(t)
	if strings.TrimSpace(stdout) != "5" || code != 0 {
		t.Errorf("wc -c printed %q and exited %d; want 5 and 0", stdout, code)
	}
}

func TestPTYResize(t *testing.T) {
	s := startSandbox(t)
	p := start(t, guardCtx(t), s, &processv1.StartRequest{
		Config: &processv1.ProcessConfig{Command: []string{"sh", "-c", "stty size; read line; stty size"}},
		Pty:    &processv1.PTY{Cols: 90, Rows: 20},
	})
	p.readUntil(t, "20 90")
	s.invoke(t, methodResizeTTY, &processv1.ResizeTTYRequest{ProcessId: p.id, Cols: 132, Rows: 43}, &processv1.ResizeTTYResponse{})
	s.invoke(t, methodWriteStdin, &processv1.WriteStdinRequest{ProcessId: p.id,
		Payload: &processv1.WriteStdinRequest_Input{Input: []byte("\n")}}, &processv1.WriteStdinResponse{})
	stdout, _, code := p.finish(t)
	if !strings.Contains(stdout, "43 132") || code != 0 {
		t.Errorf("after ResizeTTY the terminal printed %q and exited %d; want the size 43 132 and 0", stdout, code)
	}
}
