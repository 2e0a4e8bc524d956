package kubox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	"k8s.io/client-go/rest"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
)

const (
	routerToken = "router-bearer-token-0123456789abcdef"
	agentToken  = "agent-token-0123456789abcdef0123456789"
)

// startAgent runs a kubox-agent on 127.0.0.1 with its files under a temporary root, requiring
// agentToken, and returns its base URL.
func startAgent(t *testing.T) string {
	t.Helper()
	a, err := agent.New(agent.Config{Host: "127.0.0.1", Token: []byte(agentToken), Root: t.TempDir(), WorkDir: t.TempDir(),
		ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return "http://" + a.Addrs()[0].String()
}

// fakeRouter plays kubox-router for sandbox ns/sb: /sandboxes/ns/sb/<rest> goes to the agent as
// /<rest> with the agent's token, for requests that carry routerToken; anything else gets the
// router's JSON errors.
func fakeRouter(t *testing.T, agentURL string) *httptest.Server {
	t.Helper()
	target, err := url.Parse(agentURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/sandboxes/ns/sb")
			r.Out.URL.RawPath = ""
			r.Out.Header.Set("Authorization", "Bearer "+agentToken)
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
		case r.Header.Get("Authorization") != "Bearer "+routerToken:
			fail(w, http.StatusUnauthorized, "the bearer token is not valid: use a Kubernetes token or a claim token")
		case !strings.HasPrefix(r.URL.Path, "/sandboxes/ns/sb/"):
			fail(w, http.StatusNotFound, "sandbox ns/other does not exist")
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// routerSandbox returns a handle on sandbox ns/name reached through router with token.
func routerSandbox(t *testing.T, router, token, name string) *Sandbox {
	t.Helper()
	c, err := New(&rest.Config{Host: "http://127.0.0.1:1", BearerToken: token}, Options{Connection: ConnectRouter, RouterURL: router})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &Sandbox{c: c, ns: "ns", name: name, obj: &sandboxv1beta1.Sandbox{}}
}

func TestRouterModeRunsProcessesAndMovesFiles(t *testing.T) {
	router := fakeRouter(t, startAgent(t))
	sb := routerSandbox(t, router.URL, routerToken, "sb")
	ctx := t.Context()

	res, err := sb.RunCmd(ctx, Cmd{Shell: "echo out; cat >&2; exit 3", Stdin: strings.NewReader("err\n")})
	if err != nil {
		t.Fatalf("RunCmd: %v", err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("RunCmd = exit %d, stdout %q, stderr %q; want 3, \"out\\n\", \"err\\n\"", res.ExitCode, res.Stdout, res.Stderr)
	}

	var stdout, stderr bytes.Buffer
	p, err := sb.Start(ctx, Cmd{Args: []string{"sh", "-c", "cat; echo done >&2"}, Stdin: strings.NewReader("hello\nworld\n"),
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
	if _, err := sb.Files().ReadFile(ctx, "/missing"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "/missing") {
		t.Errorf("ReadFile(/missing) = %v; want ErrNotFound naming the file", err)
	}
}

func TestRouterModeErrors(t *testing.T) {
	router := fakeRouter(t, startAgent(t))
	cases := map[string]struct {
		token, sandbox string
		want           error
		contains       string
	}{
		"unknown sandbox": {token: routerToken, sandbox: "other", want: ErrNotFound, contains: "sandbox ns/other does not exist"},
		"wrong token":     {token: "wrong-token", sandbox: "sb", want: ErrUnauthorized, contains: "the bearer token is not valid"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := routerSandbox(t, router.URL, tc.token, tc.sandbox)
			_, runErr := sb.Run(t.Context(), "true")
			_, readErr := sb.Files().ReadFile(t.Context(), "/x")
			for op, err := range map[string]error{"Run": runErr, "ReadFile": readErr} {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.contains) || !strings.Contains(err.Error(), "ns/"+tc.sandbox) {
					t.Errorf("%s = %v; want %v with the router's message %q, naming the sandbox", op, err, tc.want, tc.contains)
				}
			}
		})
	}
}

func TestStartKillsTheProcessWhenItsContextEnds(t *testing.T) {
	router := fakeRouter(t, startAgent(t))
	sb := routerSandbox(t, router.URL, routerToken, "sb")
	ctx, cancel := context.WithCancel(t.Context())
	p, err := sb.Start(ctx, Cmd{Shell: "echo started; exec sleep 60", Stdout: io.Discard})
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
		var ae *APIError
		if errors.As(err, &ae) && (ae.Code == "failed_precondition" || ae.Code == "not_found") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Signal(SIGCONT) after cancel = %v; want the process to have exited", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStartWithATTY(t *testing.T) {
	router := fakeRouter(t, startAgent(t))
	sb := routerSandbox(t, router.URL, routerToken, "sb")
	out := &watchedBuffer{want: "24 80", seen: make(chan struct{})}
	resized := make(chan struct{})
	p, err := sb.Start(t.Context(), Cmd{Shell: "stty size; read line; stty size", TTY: &TTYSize{Rows: 24, Cols: 80},
		Stdout: out, Stdin: &gatedReader{r: strings.NewReader("go\n"), gate: resized}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.seen:
	case <-time.After(10 * time.Second):
		t.Fatalf("no terminal size in the output %q", out.String())
	}
	if err := p.Resize(t.Context(), TTYSize{Rows: 30, Cols: 100}); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	close(resized)
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v; output %q", code, err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "24 80") || !strings.Contains(s, "30 100") {
		t.Errorf("terminal output %q; want the size before (24 80) and after the resize (30 100)", s)
	}

	plain, err := sb.Start(t.Context(), Cmd{Args: []string{"sleep", "0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	var ae *APIError
	if err := plain.Resize(t.Context(), TTYSize{Rows: 1, Cols: 1}); !errors.As(err, &ae) || ae.Code != "failed_precondition" {
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

// A kubeconfig without a bearer token (client certificate or basic auth; routerTransport's test
// covers both) still claims; processes and files fail, saying how to get a token.
func TestRouterModeWithoutABearerTokenSaysHowToGetOne(t *testing.T) {
	c, err := New(&rest.Config{Host: "http://127.0.0.1:1", Username: "admin", Password: "secret"},
		Options{Connection: ConnectRouter, RouterURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("New: %v; want the error only when the router is used", err)
	}
	sb := &Sandbox{c: c, ns: "ns", name: "sb", obj: &sandboxv1beta1.Sandbox{}}
	_, err = sb.Run(t.Context(), "true")
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "kubectl create token") || !strings.Contains(err.Error(), "Options.Token") {
		t.Errorf("Run = %v; want ErrUnauthorized saying how to get a bearer token", err)
	}
}
