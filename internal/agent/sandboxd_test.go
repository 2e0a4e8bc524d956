package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/internal/agent/auth"
)

// A sandboxd port another process holds (a sandboxd sidecar) is left to it: the agent serves the
// others and says so in its log, rather than failing to start.
func TestATakenSandboxdPortIsLeftToItsOwner(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	restPort := free.Addr().(*net.TCPAddr).Port
	_ = free.Close()

	dir := t.TempDir()
	a, err := New(Config{Host: "127.0.0.1", Token: auth.Fixed([]byte(testToken)), CompatAuth: true, WorkDir: dir,
		SandboxdRoot: mkdir(t, dir, "workspace"), SandboxdGRPCPort: taken.Addr().(*net.TCPAddr).Port, SandboxdRESTPort: restPort,
		ShutdownGrace: time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := a.Listen(); err != nil {
		t.Fatalf("Listen with a sandboxd port taken: %v, want the agent to serve without it", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	if got := len(a.Addrs()); got != 2 {
		t.Fatalf("the agent listens on %v; want its own port and the REST port only", a.Addrs())
	}
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/health", restPort))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/health on the REST port without a token: %d, want 200", res.StatusCode)
	}
}
