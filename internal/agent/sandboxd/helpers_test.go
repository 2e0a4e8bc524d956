package sandboxd

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/goleak"

	"github.com/kubox-dev/kubox/internal/agent/files"
	"github.com/kubox-dev/kubox/internal/agent/process"
	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
	"github.com/kubox-dev/kubox/proto/process/v1/processv1connect"
	"github.com/kubox-dev/kubox/proto/watcher/v1/watcherv1connect"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The process manager's reaper lives as long as the OS process, by design.
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

// fixture is the gRPC handler over a real process manager and a temporary sandbox root, served
// over HTTP by httptest, with Connect clients of both services.
type fixture struct {
	root    string
	procs   processv1connect.ProcessServiceClient
	watcher watcherv1connect.FileWatcherServiceClient
}

func newFixture(t *testing.T, opts ProcessOptions) *fixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, err := files.NewRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	m, err := process.New(process.Options{ShutdownGrace: time.Second, StopGrace: testStopGrace})
	if err != nil {
		t.Fatal(err)
	}
	opts.Root = root
	srv := httptest.NewServer(NewGRPCHandler(m, opts, nil))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &fixture{
		root:    dir,
		procs:   processv1connect.NewProcessServiceClient(srv.Client(), srv.URL),
		watcher: watcherv1connect.NewFileWatcherServiceClient(srv.Client(), srv.URL),
	}
}

func (f *fixture) mkdir(t *testing.T, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(f.root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

func config(command ...string) *processv1.ProcessConfig {
	return &processv1.ProcessConfig{Command: command}
}

// started is a Start stream after its InitEvent.
type started struct {
	id     int32
	stream *connect.ServerStreamForClient[processv1.StartResponse]
}

func (f *fixture) start(t *testing.T, ctx context.Context, req *processv1.StartRequest) started {
	t.Helper()
	stream, err := f.procs.Start(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = stream.Close() })
	if !stream.Receive() {
		t.Fatalf("Start: no InitEvent: %v", stream.Err())
	}
	init := stream.Msg().GetInit()
	if init == nil || init.GetProcessId() <= 0 {
		t.Fatalf("Start's first event = %v, want an InitEvent with a process_id", stream.Msg())
	}
	return started{id: init.GetProcessId(), stream: stream}
}

// readUntil reads stdout events until their text contains want, and returns that text.
func (s started) readUntil(t *testing.T, want string) string {
	t.Helper()
	var out []byte
	for !strings.Contains(string(out), want) {
		if !s.stream.Receive() {
			t.Fatalf("Start stream ended (%v) before its stdout %q contained %q", s.stream.Err(), out, want)
		}
		out = append(out, s.stream.Msg().GetStdout()...)
	}
	return string(out)
}

// finish reads the stream to its end and returns the stdout and stderr bytes and the exit code.
func (s started) finish(t *testing.T) (stdout, stderr string, code int32) {
	t.Helper()
	var out, errb []byte
	exited := false
	for s.stream.Receive() {
		if exited {
			t.Fatalf("event %v after the ExitEvent", s.stream.Msg())
		}
		switch ev := s.stream.Msg().GetEvent().(type) {
		case *processv1.StartResponse_Stdout:
			out = append(out, ev.Stdout...)
		case *processv1.StartResponse_Stderr:
			errb = append(errb, ev.Stderr...)
		case *processv1.StartResponse_Exit:
			exited, code = true, ev.Exit.GetExitCode()
		default:
			t.Fatalf("unexpected event %v", s.stream.Msg())
		}
	}
	if err := s.stream.Err(); err != nil {
		t.Fatalf("Start stream: %v", err)
	}
	if !exited {
		t.Fatal("Start stream ended without an ExitEvent")
	}
	return string(out), string(errb), code
}

// codeOf is err's Connect code, or 0 for nil.
func codeOf(err error) connect.Code {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	if err != nil {
		return connect.CodeUnknown
	}
	return 0
}
