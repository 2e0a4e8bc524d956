package e2b_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/goleak"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/testutil/agenttest"
	envdfilesystem "github.com/kubox-dev/kubox/proto/e2b/envd/filesystem"
	"github.com/kubox-dev/kubox/proto/e2b/envd/filesystem/envdfilesystemconnect"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	"github.com/kubox-dev/kubox/proto/e2b/envd/process/envdprocessconnect"
)

func TestMain(m *testing.M) {
	agenttest.VerifyTestMain(m, goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"))
}

const testToken = "0123456789abcdef0123456789abcdef-e2b-test"

// guard bounds every wait in these tests; it only turns a hang into a failure.
const guard = 30 * time.Second

func guardCtx(t *testing.T) context.Context { return agenttest.Guard(t, guard) }

// sandbox is a real kubox-agent on 127.0.0.1 with its E2B port on, its file root a temporary
// directory, and envd clients as E2B's SDKs configure them (Connect protocol, JSON, the token as
// X-Access-Token).
type sandbox struct {
	url  string // the E2B port's base URL
	root string // the agent's file root on this machine
	http *http.Client
	proc envdprocessconnect.ProcessClient
	fs   envdfilesystemconnect.FilesystemClient
}

func startSandbox(t testing.TB) *sandbox {
	t.Helper()
	a := agenttest.Start(t, testToken, 2, func(c *agent.Config) {
		c.E2BPort = agenttest.FreePort(t)
		c.StopGrace = new(testStopGrace)
	})
	s := &sandbox{url: a.URL(1), root: a.Root, http: tokenClient(t, testToken)}
	s.proc = envdprocessconnect.NewProcessClient(s.http, s.url, connect.WithProtoJSON())
	s.fs = envdfilesystemconnect.NewFilesystemClient(s.http, s.url, connect.WithProtoJSON())
	return s
}

// tokenClient is an HTTP/2 (h2c) client, needed for StreamInput's client stream, that sends token
// as X-Access-Token when it is not empty.
func tokenClient(t testing.TB, token string) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if token != "" {
			r = r.Clone(r.Context())
			r.Header.Set(contract.E2BAccessTokenHeader, token)
		}
		return tr.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (s *sandbox) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(s.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func shell(script string) *envdprocess.ProcessConfig {
	return &envdprocess.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", script}}
}

func pidOf(pid uint32) *envdprocess.ProcessSelector {
	return &envdprocess.ProcessSelector{Selector: &envdprocess.ProcessSelector_Pid{Pid: pid}}
}

// events reads a process stream (Start's or Connect's) event by event.
type events struct {
	next func() bool
	msg  func() *envdprocess.ProcessEvent
	err  func() error
}

func startEvents(s *connect.ServerStreamForClient[envdprocess.StartResponse]) events {
	return events{s.Receive, func() *envdprocess.ProcessEvent { return s.Msg().GetEvent() }, s.Err}
}

func connectEvents(s *connect.ServerStreamForClient[envdprocess.ConnectResponse]) events {
	return events{s.Receive, func() *envdprocess.ProcessEvent { return s.Msg().GetEvent() }, s.Err}
}

// pid reads the first event, which must be start, and returns its pid.
func (e events) pid(t *testing.T) uint32 {
	t.Helper()
	if !e.next() {
		t.Fatalf("the stream ended before its start event: %v", e.err())
	}
	start := e.msg().GetStart()
	if start == nil || start.GetPid() == 0 {
		t.Fatalf("the first event is %v, want start with a pid", e.msg())
	}
	return start.GetPid()
}

// output is what a process wrote, by stream, and how it ended.
type output struct {
	stdout, stderr, pty strings.Builder
	end                 *envdprocess.ProcessEvent_EndEvent
	keepalives          int
}

// until reads events until the output of any stream contains want, or the end.
func (e events) until(t *testing.T, o *output, want string) {
	t.Helper()
	for !strings.Contains(o.stdout.String()+o.stderr.String()+o.pty.String(), want) {
		if !e.read(t, o) {
			t.Fatalf("the stream ended without %q in its output (stdout %q, stderr %q, pty %q)", want, &o.stdout, &o.stderr, &o.pty)
		}
	}
}

// finish reads events until the end event and the stream's end.
func (e events) finish(t *testing.T, o *output) {
	t.Helper()
	for e.read(t, o) {
	}
	if o.end == nil {
		t.Fatalf("the stream ended without an end event (stdout %q, stderr %q)", &o.stdout, &o.stderr)
	}
}

// read reads one event into o; false at the end of the stream.
func (e events) read(t *testing.T, o *output) bool {
	t.Helper()
	if !e.next() {
		if err := e.err(); err != nil {
			t.Fatalf("the stream failed: %v", err)
		}
		return false
	}
	ev := e.msg()
	switch {
	case ev.GetData() != nil:
		d := ev.GetData()
		o.stdout.Write(d.GetStdout())
		o.stderr.Write(d.GetStderr())
		o.pty.Write(d.GetPty())
	case ev.GetEnd() != nil:
		o.end = ev.GetEnd()
	case ev.GetKeepalive() != nil:
		o.keepalives++
	case ev.GetStart() != nil:
		t.Fatalf("a second start event: %v", ev)
	}
	return true
}

func codeOf(err error) connect.Code {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	return connect.CodeUnknown
}

// stat describes path through the Filesystem service.
func (s *sandbox) stat(ctx context.Context, path string) (*envdfilesystem.EntryInfo, error) {
	res, err := s.fs.Stat(ctx, connect.NewRequest(&envdfilesystem.StatRequest{Path: path}))
	if err != nil {
		return nil, err
	}
	return res.Msg.GetEntry(), nil
}
