package conformance

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kubox-dev/kubox/internal/agent"
)

const token = "conformance-token-0123456789abcdef0123456789"

// guard bounds every wait in these tests; it only turns a hang into a failure.
const guard = 30 * time.Second

func guardCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// sandbox is a running kubox-agent and clients of its sandboxd ports.
type sandbox struct {
	// root is sandboxd's root on the host.
	root string
	// rest is the REST port's base URL, http://127.0.0.1:port.
	rest string
	// conn is a gRPC connection to the gRPC port that sends the agent token; anon sends none.
	conn, anon *grpc.ClientConn
}

// startSandbox runs kubox-agent in this process with its sandboxd ports on 127.0.0.1 and the
// token required, and stops it when the test ends.
func startSandbox(t *testing.T) *sandbox {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "workspace")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	grpcPort, restPort := freePort(t), freePort(t)
	a, err := agent.New(agent.Config{
		Host: "127.0.0.1", Token: []byte(token), CompatAuth: true,
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
	return &sandbox{
		root: root,
		rest: fmt.Sprintf("http://127.0.0.1:%d", restPort),
		conn: dial(t, grpcAddr, grpc.WithPerRPCCredentials(bearer(token))),
		anon: dial(t, grpcAddr),
	}
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// bearer sends the agent token as sandboxd's optional authentication does: authorization metadata.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// do sends a REST request with the token (when auth) and returns the status and body.
func (s *sandbox) do(t *testing.T, method, path string, body io.Reader, auth bool, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(guardCtx(t), method, s.rest+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+token)
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

func (s *sandbox) put(t *testing.T, path, content string) {
	t.Helper()
	if code, _, body := s.do(t, http.MethodPut, "/v1/files/"+path, strings.NewReader(content), true); code != http.StatusNoContent {
		t.Fatalf("PUT %s: %d %s, want 204", path, code, body)
	}
}
