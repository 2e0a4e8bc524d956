package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	envdfilesystem "github.com/kubox-dev/kubox/proto/e2b/envd/filesystem"
	"github.com/kubox-dev/kubox/proto/e2b/envd/filesystem/envdfilesystemconnect"
)

// From Shutdown on (the sandbox suspends), envd's calls that change files are refused like the
// agent's own: MakeDir with unavailable, uploads with 503, both saying the sandbox is suspending.
func TestTheE2BPortRefusesWritesWhileSuspending(t *testing.T) {
	dir := t.TempDir()
	a, _, _ := startAgent(t, func(c *Config) { c.SandboxName = "sb-test"; c.Root = mkdir(t, dir, "root"); c.E2BPort = 1 })
	if a.e2b == nil {
		t.Fatal("the agent built no E2B handler with E2BPort set")
	}
	// The handler, also served where the listeners' shutdown does not reach.
	srv := httptest.NewServer(a.e2b)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	fs := envdfilesystemconnect.NewFilesystemClient(http.DefaultClient, srv.URL, connect.WithInterceptors(tokenHeader{}))
	_, err := fs.MakeDir(ctx, connect.NewRequest(&envdfilesystem.MakeDirRequest{Path: "/d"}))
	if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "suspending") {
		t.Errorf("MakeDir while suspending: %v, want unavailable saying the sandbox is suspending", err)
	}
	if _, err := fs.Stat(ctx, connect.NewRequest(&envdfilesystem.StatRequest{Path: "/"})); err != nil {
		t.Errorf("Stat while suspending: %v, want reads still served", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/files?path=/f.txt", strings.NewReader("x"))
	req.Header.Set(contract.E2BAccessTokenHeader, testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("POST /files while suspending: %d, want 503", res.StatusCode)
	}
}

// tokenHeader sends the agent token as E2B's SDKs do.
type tokenHeader struct{ connect.Interceptor }

func (tokenHeader) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set(contract.E2BAccessTokenHeader, testToken)
		return next(ctx, req)
	}
}
