package framework

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubox-dev/kubox/internal/router"
)

// StartRouter runs kubox-router in this process until the test ends: for namespace ns, with the
// agent token key key, on 127.0.0.1, dialing the loopback pod IPs the tests' agents listen on,
// its log in the test's log. mutate (may be nil) changes the configuration first. It returns
// the router and its URL once the router's caches are synced.
func (e *Env) StartRouter(t testing.TB, ns string, key []byte, mutate func(*router.Config)) (*router.Router, string) {
	t.Helper()
	return e.StartRouterAs(t, e.Config, ns, key, mutate)
}

// StartRouterAs is StartRouter with the router reaching the API server as restConfig's identity
// (a ServiceAccount's, say), so a test sees what its RBAC lets it do.
func (e *Env) StartRouterAs(t testing.TB, restConfig *rest.Config, ns string, key []byte, mutate func(*router.Config)) (*router.Router, string) {
	t.Helper()
	cfg := router.DefaultConfig()
	cfg.AgentTokenKey = key
	cfg.Namespace = ns
	cfg.AllowLoopbackPodIP = true
	cfg.UpstreamRetryDelay = 20 * time.Millisecond
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.Log = slog.New(slog.NewJSONHandler(TestWriter{t}, nil))
	if mutate != nil {
		mutate(&cfg)
	}
	rt, err := router.New(cfg, restConfig)
	if err != nil {
		t.Fatalf("router.New: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, DefaultTimeout)
	defer wcancel()
	if !rt.WaitForCacheSync(wctx) {
		t.Fatal("the router's cache did not sync")
	}
	return rt, "http://" + l.Addr().String()
}

// TestWriter sends what is written to it (a component's log) to the test's log, which shows it
// when the test fails or runs with -v.
type TestWriter struct{ T testing.TB }

func (w TestWriter) Write(b []byte) (int, error) {
	w.T.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
