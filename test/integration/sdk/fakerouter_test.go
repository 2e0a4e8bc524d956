package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// These tests pin how the SDK talks to a router (ConnectRouter) and reads its errors, with a
// stand-in router in front of a real kubox-agent, so that what the router itself decides does
// not mask what the SDK does.

// routerToken is the bearer token fakeRouter accepts.
const routerToken = "router-bearer-token-0123456789abcdef"

// fakeRouter plays kubox-router for the sandbox sb only: /sandboxes/<ns>/<name>/<rest> goes to
// its agent on 127.0.0.1:agentPort as /<rest> with the agent token the controller derived for
// it, for requests that carry routerToken; anything else gets the router's JSON errors.
func fakeRouter(t *testing.T, f *fixture, sb *kubox.Sandbox) *httptest.Server {
	t.Helper()
	target, err := url.Parse(fmt.Sprintf("http://%s:%d", framework.LoopbackIP, f.agentPort))
	if err != nil {
		t.Fatal(err)
	}
	prefix := "/sandboxes/" + sb.Namespace() + "/" + sb.Name()
	agentToken := string(framework.AgentToken(f.key, sb.Object().UID))
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, prefix)
			r.Out.URL.RawPath = ""
			r.Out.Header.Set(contract.AuthorizationHeader, "Bearer "+agentToken)
		},
		FlushInterval: -1,
	}
	fail := func(w http.ResponseWriter, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "code": code})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get(contract.AuthorizationHeader) != "Bearer "+routerToken:
			fail(w, http.StatusUnauthorized, "the bearer token is not valid: use a Kubernetes token or a claim token")
		case !strings.HasPrefix(r.URL.Path, prefix+"/"):
			ns, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/sandboxes/"), "/")
			name, _, _ = strings.Cut(name, "/")
			fail(w, http.StatusNotFound, fmt.Sprintf("sandbox %s/%s does not exist", ns, name))
		default:
			_ = http.NewResponseController(w).EnableFullDuplex() // as kubox-router's proxy does
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// openThrough opens the sandbox named name in the fixture's namespace with an SDK client that
// reaches it through router with token.
func openThrough(t *testing.T, f *fixture, router, token, name string) *kubox.Sandbox {
	t.Helper()
	c, err := kubox.New(env.Config, kubox.Options{Namespace: f.ns, Connection: kubox.ConnectRouter, RouterURL: router,
		Token: token, ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	sb, err := c.Open(t.Context(), f.ns, name)
	if err != nil {
		t.Fatalf("Open %s/%s: %v", f.ns, name, err)
	}
	return sb
}

// routedSandbox claims a sandbox with a running agent and returns it opened through a
// fakeRouter in front of that agent.
func routedSandbox(t *testing.T, f *fixture) (sb *kubox.Sandbox, router string) {
	t.Helper()
	direct := claimWithAgent(t, f)
	router = fakeRouter(t, f, direct).URL
	return openThrough(t, f, router, routerToken, direct.Name()), router
}

func TestRouterModeRunsProcessesAndMovesFiles(t *testing.T) {
	f := setup(t)
	sb, _ := routedSandbox(t, f)
	ctx := t.Context()

	res, err := sb.RunCmd(ctx, kubox.Cmd{Shell: "echo out; cat >&2; exit 3", Stdin: strings.NewReader("err\n")})
	if err != nil {
		t.Fatalf("RunCmd: %v", err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("RunCmd = exit %d, stdout %q, stderr %q; want 3, \"out\\n\", \"err\\n\"", res.ExitCode, res.Stdout, res.Stderr)
	}

	var stdout, stderr bytes.Buffer
	p, err := sb.Start(ctx, kubox.Cmd{Args: []string{"sh", "-c", "cat; echo done >&2"}, Stdin: strings.NewReader("hello\nworld\n"),
		Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v; want 0", code, err)
	}
	if stdout.String() != "hello\nworld\n" || stderr.String() != "done\n" {
		t.Errorf("stdout %q, stderr %q; want the input back and \"done\\n\"", stdout.String(), stderr.String())
	}

	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if err := sb.Files().WriteFile(ctx, "/dir/a b.bin", data, 0o600); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	got, err := sb.Files().ReadFile(ctx, "/dir/a b.bin")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile = %d bytes, %v; want the %d bytes written", len(got), err, len(data))
	}
	fi, err := sb.Files().Stat(ctx, "/dir/a b.bin")
	if err != nil || fi.Size != int64(len(data)) || fi.Mode.Perm() != 0o600 || fi.IsDir {
		t.Errorf("Stat = %+v, %v; want a %d-byte file with mode 0600", fi, err, len(data))
	}
	if _, err := sb.Files().ReadFile(ctx, "/missing"); !errors.Is(err, kubox.ErrNotFound) || !strings.Contains(err.Error(), "/missing") {
		t.Errorf("ReadFile(/missing) = %v; want ErrNotFound naming the file", err)
	}
}

func TestRouterModeErrors(t *testing.T) {
	f := setup(t)
	routed, router := routedSandbox(t, f)
	// Another Ready sandbox, which the stand-in router does not serve.
	other, err := f.sdk.Claim(t.Context(), kubox.FromTemplate("python"))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	cases := map[string]struct {
		token, sandbox string
		want           error
		contains       string
	}{
		"unknown sandbox": {token: routerToken, sandbox: other.Name(), want: kubox.ErrNotFound,
			contains: "sandbox " + f.ns + "/" + other.Name() + " does not exist"},
		"wrong token": {token: "wrong-token", sandbox: routed.Name(), want: kubox.ErrUnauthorized, contains: "the bearer token is not valid"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := openThrough(t, f, router, tc.token, tc.sandbox)
			_, runErr := sb.Run(t.Context(), "true")
			_, readErr := sb.Files().ReadFile(t.Context(), "/x")
			for op, err := range map[string]error{"Run": runErr, "ReadFile": readErr} {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.contains) || !strings.Contains(err.Error(), f.ns+"/"+tc.sandbox) {
					t.Errorf("%s = %v; want %v with the router's message %q, naming the sandbox", op, err, tc.want, tc.contains)
				}
			}
		})
	}
}

func TestStartKillsTheProcessWhenItsContextEnds(t *testing.T) {
	f := setup(t)
	sb, _ := routedSandbox(t, f)
	ctx, cancel := context.WithCancel(t.Context())
	p, err := sb.Start(ctx, kubox.Cmd{Shell: "echo started; exec sleep 60", Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v; want context.Canceled", err)
	}
	// The process is gone: a harmless signal fails with FailedPrecondition (exited) or NotFound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.Signal(t.Context(), syscall.SIGCONT)
		var ae *kubox.APIError
		if errors.As(err, &ae) && (ae.Code == "failed_precondition" || ae.Code == "not_found") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Signal(SIGCONT) after cancel = %v; want the process to have exited", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStartWithATTYResizes(t *testing.T) {
	f := setup(t)
	sb, _ := routedSandbox(t, f)
	out := &watchedBuffer{want: "24 80", seen: make(chan struct{})}
	resized := make(chan struct{})
	p, err := sb.Start(t.Context(), kubox.Cmd{Shell: "stty size; read line; stty size", TTY: &kubox.TTYSize{Rows: 24, Cols: 80},
		Stdout: out, Stdin: &gatedReader{r: strings.NewReader("go\n"), gate: resized}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.seen:
	case <-time.After(framework.DefaultTimeout):
		t.Fatalf("no terminal size in the output %q", out.String())
	}
	if err := p.Resize(t.Context(), kubox.TTYSize{Rows: 30, Cols: 100}); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	close(resized)
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v; output %q", code, err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "24 80") || !strings.Contains(s, "30 100") {
		t.Errorf("terminal output %q; want the size before (24 80) and after the resize (30 100)", s)
	}

	plain, err := sb.Start(t.Context(), kubox.Cmd{Args: []string{"sleep", "0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	var ae *kubox.APIError
	if err := plain.Resize(t.Context(), kubox.TTYSize{Rows: 1, Cols: 1}); !errors.As(err, &ae) || ae.Code != "failed_precondition" {
		t.Errorf("Resize without a TTY = %v; want failed_precondition", err)
	}
	if _, err := plain.Wait(); err != nil {
		t.Error(err)
	}
}

// gatedReader reads nothing until gate is closed.
type gatedReader struct {
	r    io.Reader
	gate chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

// watchedBuffer is a buffer that closes seen once it holds want.
type watchedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
