package conformance

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/testutil/agenttest"
	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
)

const token = "conformance-token-0123456789abcdef0123456789"

// startAgent runs kubox-agent in this process with its sandboxd ports on 127.0.0.1 and the token
// required, stops it when the test ends, and returns a Target that sends the token, and the
// addresses of the gRPC port.
func startAgent(t *testing.T) (*Target, string) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "workspace")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	grpcPort, restPort := agenttest.FreePort(t), agenttest.FreePort(t)
	a, err := agent.New(agent.Config{
		Host: "127.0.0.1", Token: auth.Fixed([]byte(token)), CompatAuth: true,
		SandboxdRoot: root, SandboxdGRPCPort: grpcPort, SandboxdRESTPort: restPort, WorkDir: dir,
		ShutdownGrace: 2 * time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	if err := a.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	if n := len(a.Addrs()); n != 3 {
		t.Fatalf("the agent listens on %v; want its own port and both sandboxd ports", a.Addrs())
	}
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", grpcPort)
	return &Target{
		Conn:       Dial(t, grpcAddr, Metadata{"authorization": "Bearer " + token}),
		GRPCURL:    "http://" + grpcAddr,
		GRPCHeader: http.Header{"Authorization": {"Bearer " + token}},
		REST:       fmt.Sprintf("http://127.0.0.1:%d", restPort),
		Header:     http.Header{"Authorization": {"Bearer " + token}},
		Root:       root,
	}, grpcAddr
}

func TestKuboxAgent(t *testing.T) {
	tg, _ := startAgent(t)
	Run(t, tg)
}

func TestTheTokenIsRequiredExceptForHealth(t *testing.T) {
	tg, grpcAddr := startAgent(t)
	anon := Dial(t, grpcAddr, nil)
	err := anon.Invoke(guardCtx(t), methodExecute, &processv1.ExecuteRequest{Config: &processv1.ProcessConfig{Command: []string{"true"}}},
		&processv1.ExecuteResponse{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("Execute without the token: %v, want Unauthenticated", err)
	}
	noToken := &Target{REST: tg.REST}
	if code, _, body := noToken.do(t, http.MethodGet, "/v1/health", nil); code != http.StatusOK {
		t.Errorf("GET /v1/health without a token: %d %s, want 200", code, body)
	}
	if code, hdr, _ := noToken.do(t, http.MethodGet, "/v1/files/", nil); code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
		t.Errorf("GET /v1/files/ without a token: %d, want 401 with WWW-Authenticate", code)
	}
}
