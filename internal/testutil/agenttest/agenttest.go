// Package agenttest starts real kubox-agents on 127.0.0.1 for the tests that drive an agent's
// ports directly (internal/agent/e2b, test/integration/codeinterp): one goleak setup, a free port,
// an agent in a temporary directory shut down when the test ends, and a request with a JSON body.
package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
)

// VerifyTestMain is the TestMain of a package whose tests start agents: goleak.VerifyTestMain,
// ignoring the goroutines an agent leaves by design (the process manager's reaper and its signal
// handler live as long as the OS process) and an HTTP client's idle connections, plus extra.
func VerifyTestMain(m *testing.M, extra ...goleak.Option) {
	goleak.VerifyTestMain(m, append([]goleak.Option{
		goleak.IgnoreTopFunction("github.com/kubox-dev/kubox/internal/agent/process.(*reaper).loop"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreAnyFunction("os/signal.loop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	}, extra...)...)
}

// Guard is a context that ends after d or when the test ends: it bounds a wait, turning a hang
// into a failure, and asserts no time limit.
func Guard(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// Agent is a kubox-agent that Start started.
type Agent struct {
	*agent.Agent
	// Root is the agent's file root and working directory, with symlinks resolved.
	Root string
}

// Start starts a kubox-agent on 127.0.0.1 with token, on a port the kernel picks as it listens
// (so no other listener can take it between a check and the bind), its file root and working
// directory a new temporary directory and a shutdown grace of 2s, after configure has changed that
// configuration (to turn on a port, set the processes' environment). It fails the test unless the
// agent listens on listeners addresses (its own port and each one configure turned on), and shuts
// the agent down when the test ends.
func Start(t testing.TB, token string, listeners int, configure func(*agent.Config)) *Agent {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Host: "127.0.0.1", Port: 0, Token: auth.Fixed([]byte(token)),
		Root: dir, WorkDir: dir, ShutdownGrace: 2 * time.Second}
	if configure != nil {
		configure(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	if err := a.Listen(); err != nil {
		t.Fatalf("agent.Listen on 127.0.0.1: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("Shutting the agent down: %v", err)
		}
	})
	if got := len(a.Addrs()); got != listeners {
		t.Fatalf("the agent listens on %v; want %d addresses, its own port and each one the test turned on", a.Addrs(), listeners)
	}
	return &Agent{Agent: a, Root: dir}
}

// URL is the base URL of the agent's listener i, in the order of agent.Addrs (0 is its own port).
func (a *Agent) URL(i int) string { return "http://" + a.Addrs()[i].String() }

// JSONRequest is a request to url with body as its JSON when body is not nil, and a JSON content
// type.
func JSONRequest(ctx context.Context, t testing.TB, method, url string, body any) *http.Request {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("Encoding the body of %s %s: %v", method, url, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}
