package conformance

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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

// guard bounds every wait in these tests; it only turns a hang into a failure.
const guard = 30 * time.Second

func guardCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// Target is a sandbox that speaks sandboxd's protocol, as a client reaches it: directly, or
// through kubox-router.
type Target struct {
	// Conn reaches the gRPC port, sending whatever metadata the way there needs.
	Conn *grpc.ClientConn
	// GRPCURL is the gRPC port's base URL for gRPC-Web (browser) clients over HTTP/1.1, and
	// GRPCHeader the headers they send (the same metadata as Conn's).
	GRPCURL    string
	GRPCHeader http.Header
	// REST is the REST port's base URL; Header is sent with every REST request.
	REST   string
	Header http.Header
	// Root is sandboxd's root as the sandbox sees it (the working directory of its processes).
	Root string
	// FileMode returns the permission bits of the file at path (relative to Root), looked at
	// without the API under test. Unset, the file is looked at under Root on this host.
	FileMode func(t *testing.T, path string) (fs.FileMode, error)
}

// fileMode looks at a file the calls wrote.
func (tg *Target) fileMode(t *testing.T, path string) (fs.FileMode, error) {
	if tg.FileMode != nil {
		return tg.FileMode(t, path)
	}
	fi, err := os.Stat(filepath.Join(tg.Root, path))
	if err != nil {
		return 0, err
	}
	return fi.Mode().Perm(), nil
}

// Metadata is gRPC metadata sent with every call (authorization, routing headers).
type Metadata map[string]string

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (m Metadata) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return m, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: sandboxd has no TLS.
func (Metadata) RequireTransportSecurity() bool { return false }

// Dial connects a gRPC client to addr over HTTP/2 without TLS, as grpcio and grpc-go clients
// connect to sandboxd, sending md with every call; the connection closes when the test ends.
func Dial(t testing.TB, addr string, md Metadata) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if len(md) > 0 {
		opts = append(opts, grpc.WithPerRPCCredentials(md))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// do sends a REST request with the target's headers (and header, name-value pairs) and returns
// the status, headers and body.
func (tg *Target) do(t *testing.T, method, path string, body io.Reader, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(guardCtx(t), method, tg.REST+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range tg.Header {
		req.Header[k] = v
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return res.StatusCode, res.Header, b
}

func (tg *Target) put(t *testing.T, path, content string) {
	t.Helper()
	if code, _, body := tg.do(t, http.MethodPut, "/v1/files/"+path, strings.NewReader(content)); code != http.StatusNoContent {
		t.Fatalf("PUT %s: %d %s, want 204", path, code, body)
	}
}

func (tg *Target) invoke(t *testing.T, method string, req, res any) {
	t.Helper()
	if err := tg.Conn.Invoke(guardCtx(t), method, req, res); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// proc is a process started with Start, read through its stream.
type proc struct {
	id     int32
	stream grpc.ClientStream
	// stderr collects what readUntil read of stderr, for finish.
	stderr *strings.Builder
}

func (tg *Target) start(t *testing.T, ctx context.Context, req *processv1.StartRequest) proc {
	t.Helper()
	stream, err := tg.Conn.NewStream(ctx, serverStream, methodStart)
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
		p.stderr.Write(ev.GetStderr())
		exit = ev.GetExit()
	}
	if exit == nil {
		t.Fatal("the Start stream ended without an ExitEvent")
	}
	return stdout.String(), p.stderr.String(), exit.GetExitCode()
}
