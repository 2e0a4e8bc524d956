package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/mcpserver"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// mcpFixture is a namespace with a warm pool, a real router, `kubox mcp`'s HTTP handler, and a
// ServiceAccount "dev" allowed to claim and connect.
type mcpFixture struct {
	*fixture
	routerURL string
	devToken  string
}

func setupMCP(t *testing.T) *mcpFixture {
	t.Helper()
	f := setup(t)
	env.Create(t, testutil.MakePool("python", f.ns, "python").Replicas(2).Obj())
	_, routerURL := env.StartRouter(t, f.ns, f.key, nil)
	return &mcpFixture{fixture: f, routerURL: routerURL, devToken: claimerToken(t, f.ns, "dev")}
}

// serve starts the MCP server's HTTP handler and returns its URL.
func (m *mcpFixture) serve(t *testing.T, mutate func(*mcpserver.Config)) string {
	t.Helper()
	cfg := mcpserver.Config{Namespace: m.ns, RouterURL: m.routerURL, API: env.Config}
	if mutate != nil {
		mutate(&cfg)
	}
	s := mcpserver.New(cfg)
	t.Cleanup(func() { s.Close(context.Background()) })
	h, err := s.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// waitProgress waits up to d for progress messages holding each of want; it returns "" once
// they came, else the messages seen.
func (c *mcpClient) waitProgress(d time.Duration, want ...string) string {
	deadline := time.Now().Add(d)
	for {
		c.mu.Lock()
		got := strings.Join(c.progress, "|")
		c.mu.Unlock()
		missing := false
		for _, w := range want {
			missing = missing || !strings.Contains(got, w)
		}
		if !missing {
			return ""
		}
		if time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mcpClient is an MCP client session with token; progress receives the progress messages.
type mcpClient struct {
	*mcp.ClientSession
	mu       sync.Mutex
	progress []string
}

func connectMCP(t *testing.T, url, token, protocol string) (*mcpClient, error) {
	t.Helper()
	c := &mcpClient{}
	cl := mcp.NewClient(&mcp.Implementation{Name: "kubox-test", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, req.Params.Message)
			c.mu.Unlock()
		}})
	hc := &http.Client{Transport: &contract.BearerTransport{Token: token, Base: http.DefaultTransport}}
	if token == "" {
		hc = http.DefaultClient
	}
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.ClientSession = cs
	return c, nil
}

// call calls tool with args; it returns the structured output, or the tool's error text.
func (c *mcpClient) call(t *testing.T, tool string, args map[string]any) (map[string]any, error) {
	t.Helper()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken("p-" + tool)
	res, err := c.CallTool(t.Context(), params)
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	if res.IsError {
		var msg []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				msg = append(msg, tc.Text)
			}
		}
		return nil, errors.New(strings.Join(msg, "; "))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out, nil
}

func (c *mcpClient) mustCall(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	out, err := c.call(t, tool, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	return out
}

// startAgentOf starts the agent of the sandbox bound to claim.
func (m *mcpFixture) startAgentOf(t *testing.T, sandbox string) {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: m.ns, Name: sandbox}, sb); err != nil {
		t.Fatal(err)
	}
	framework.StartAgent(t, agent.Config{Port: m.agentPort, Token: framework.AgentAuth(m.key, sb.UID), Root: t.TempDir()})
}

// TestMCPServerActsAsItsCaller drives `kubox mcp`'s Streamable HTTP endpoint with the official
// MCP Go SDK's client, against a real API server, kubox-controller, kubox-router and kubox-agent:
// a ServiceAccount's token claims a warm sandbox, runs a command with its output streamed as
// progress, runs code, writes, reads and lists files, and releases the claim; a request without
// a token is refused, an identity without RBAC can neither claim nor reach dev's claim, and a
// claim token reaches its own claim only.
func TestMCPServerActsAsItsCaller(t *testing.T) {
	m := setupMCP(t)
	url := m.serve(t, nil)

	if _, err := connectMCP(t, url, "", ""); err == nil {
		t.Error("an MCP session without a token was accepted")
	}
	if _, err := connectMCP(t, url, "not-a-token", ""); err == nil {
		t.Error("an MCP session with a token the API server refuses was accepted")
	}

	dev, err := connectMCP(t, url, m.devToken, "")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := dev.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("ListTools = %d tools, %v; want 7", len(tools.Tools), err)
	}
	claimed := dev.mustCall(t, "claim_sandbox", map[string]any{"pool": "python", "ttl_seconds": 600})
	claim, sandbox := claimed["claim"].(string), claimed["sandbox"].(string)
	if claim == "" || sandbox == "" || claimed["namespace"] != m.ns {
		t.Fatalf("claim_sandbox = %v; want a claim, its sandbox and namespace %s", claimed, m.ns)
	}
	cl := &extv1beta1.SandboxClaim{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: m.ns, Name: claim}, cl); err != nil {
		t.Fatal(err)
	}
	if cl.Spec.Lifecycle == nil || cl.Spec.Lifecycle.ShutdownTime == nil ||
		time.Until(cl.Spec.Lifecycle.ShutdownTime.Time) > 11*time.Minute {
		t.Errorf("claim %s lifecycle %+v; want a shutdown time about 10 minutes away", claim, cl.Spec.Lifecycle)
	}
	m.startAgentOf(t, sandbox)

	out := dev.mustCall(t, "run_command", map[string]any{"claim": claim, "command": "echo one; echo two >&2; exit 3"})
	if out["exit_code"] != float64(3) || out["stdout"] != "one\n" || out["stderr"] != "two\n" {
		t.Errorf("run_command = %v; want exit 3, stdout one, stderr two", out)
	}
	// The client hands each notification to its handler on its own, so one may still be on its
	// way when the call's result is in: wait a little for both.
	if got := dev.waitProgress(5*time.Second, "stdout: one\n", "stderr: two\n"); got != "" {
		t.Errorf("progress notifications %q; want the output streamed", got)
	}
	// run_code needs the code interpreter, which this test's agent does not serve: see
	// TestMCPRunCodeKeepsState.
	if _, err := dev.call(t, "run_code", map[string]any{"claim": claim, "language": "cobol", "code": "x"}); err == nil ||
		!strings.Contains(err.Error(), "python, bash, node") {
		t.Errorf("run_code cobol: %v; want an error listing the languages", err)
	}
	dev.mustCall(t, "write_file", map[string]any{"claim": claim, "path": "/work/notes.txt", "content": "from mcp"})
	if out := dev.mustCall(t, "read_file", map[string]any{"claim": claim, "path": "/work/notes.txt"}); out["content"] != "from mcp" {
		t.Errorf("read_file = %v; want the content written", out)
	}
	listed := dev.mustCall(t, "list_files", map[string]any{"claim": claim, "path": "/work"})
	if b, _ := json.Marshal(listed["entries"]); !strings.Contains(string(b), `"name":"notes.txt"`) {
		t.Errorf("list_files /work = %s; want notes.txt", b)
	}

	// Another identity gets nothing through the server: not a claim, not dev's sandbox.
	nobody, err := connectMCP(t, url, env.ServiceAccountToken(t, m.ns, "nobody"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nobody.call(t, "claim_sandbox", map[string]any{"pool": "python"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("claim_sandbox as a ServiceAccount without RBAC: %v; want forbidden", err)
	}
	if _, err := nobody.call(t, "run_command", map[string]any{"claim": claim, "command": "true"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("run_command on dev's claim as another ServiceAccount: %v; want forbidden", err)
	}

	// A claim token reaches its claim's sandbox and nothing else.
	devSDK, err := kubox.New(env.ConfigFor(m.devToken), kubox.Options{Namespace: m.ns, RouterURL: m.routerURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = devSDK.Close() })
	claimToken, _, err := devSDK.MintClaimToken(t.Context(), m.ns, claim, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	holder, err := connectMCP(t, url, claimToken, "")
	if err != nil {
		t.Fatal(err)
	}
	if out := holder.mustCall(t, "read_file", map[string]any{"path": "/work/notes.txt"}); out["content"] != "from mcp" {
		t.Errorf("read_file with the claim token = %v; want the file", out)
	}
	if _, err := holder.call(t, "claim_sandbox", map[string]any{"pool": "python"}); err == nil || !strings.Contains(err.Error(), "Kubernetes token") {
		t.Errorf("claim_sandbox with a claim token: %v; want a refusal naming the Kubernetes token it needs", err)
	}
	if _, err := holder.call(t, "run_command", map[string]any{"claim": "someone-else", "command": "true"}); err == nil ||
		!strings.Contains(err.Error(), "reaches only claim "+m.ns+"/"+claim) {
		t.Errorf("run_command on another claim with a claim token: %v; want a refusal", err)
	}

	if out := dev.mustCall(t, "release_sandbox", map[string]any{"claim": claim}); out["released"] != m.ns+"/"+claim {
		t.Errorf("release_sandbox = %v", out)
	}
	waitClaimGone(t, m.ns, claim)
}

// TestMCPReleasesClaimsWhenSessionsEndOrIdle checks that the claims a session made are deleted
// when a (2025-11-25 protocol) session closes, and, for sessionless (2026-07-28) clients, once
// they sit unused for the idle time; a claim in use is kept.
func TestMCPReleasesClaimsWhenSessionsEndOrIdle(t *testing.T) {
	m := setupMCP(t)
	// Two servers: on the first nothing idles within the test, so only the session's end can
	// release its claim; on the second claims idle after 4 s.
	sessions := m.serve(t, nil)
	url := m.serve(t, func(c *mcpserver.Config) { c.IdleRelease = 4 * time.Second; c.SessionTimeout = time.Hour })

	legacy, err := connectMCP(t, sessions, m.devToken, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	first := legacy.mustCall(t, "claim_sandbox", map[string]any{"pool": "python"})["claim"].(string)
	if err := legacy.Close(); err != nil {
		t.Fatal(err)
	}
	waitClaimGone(t, m.ns, first)

	fresh, err := connectMCP(t, url, m.devToken, "")
	if err != nil {
		t.Fatal(err)
	}
	second := fresh.mustCall(t, "claim_sandbox", map[string]any{"pool": "python"})
	claim := second["claim"].(string)
	m.startAgentOf(t, second["sandbox"].(string))
	// Used every second for twice the idle time: kept.
	for range 8 {
		fresh.mustCall(t, "run_command", map[string]any{"claim": claim, "command": "true"})
		time.Sleep(time.Second)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: m.ns, Name: claim}, &extv1beta1.SandboxClaim{}); err != nil {
		t.Fatalf("claim %s in use was released: %v", claim, err)
	}
	waitClaimGone(t, m.ns, claim)
}

func waitClaimGone(t *testing.T, ns, name string) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &extv1beta1.SandboxClaim{})
		return apierrors.IsNotFound(err), fmt.Sprintf("claim %s/%s: %v; want it deleted", ns, name, err)
	})
}
