package framework_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

func TestStartAgent(t *testing.T) {
	port := framework.FreePort(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := framework.AgentToken([]byte("0123456789abcdef0123456789abcdef"), "uid-1")
	a := framework.StartAgent(t, agent.Config{Port: port, Token: tok, Root: root})
	if a.Root != root || a.WorkDir == "" {
		t.Errorf("Root %q, WorkDir %q; want Root %q and a temporary WorkDir", a.Root, a.WorkDir, root)
	}
	url := "http://" + net.JoinHostPort(framework.LoopbackIP, strconv.Itoa(port)) + "/files/hello.txt"

	get := func(token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Errorf("GET without a token: %d; want 401", code)
	}
	if code := get(string(tok)); code != http.StatusOK {
		t.Errorf("GET with the derived token: %d; want 200", code)
	}

	a.Stop()
	if c, err := net.Dial("tcp", net.JoinHostPort(framework.LoopbackIP, strconv.Itoa(port))); err == nil {
		_ = c.Close()
		t.Errorf("the agent still listens on port %d after Stop", port)
	}
	a.Stop() // stopped already: nothing more
}
