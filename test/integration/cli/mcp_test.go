package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// TestMCPOverStdio runs `kubox mcp` as an MCP client such as Claude Desktop starts it: the
// official MCP Go SDK's client on its stdin and stdout. It claims a sandbox from a template,
// runs a command in it, and closes the stream: the command exits 0 and the claim is gone.
func TestMCPOverStdio(t *testing.T) {
	f := setup(t).withAgents()
	env.Create(t, f.template("python").Obj())

	clientOut, serverIn := io.Pipe()
	serverOut, clientIn := io.Pipe()
	var stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		code := f.kubox(t, clientOut, clientIn, &stderr, "mcp")
		_ = clientIn.Close()
		exited <- code
	}()
	cl := mcp.NewClient(&mcp.Implementation{Name: "kubox-test", Version: "v0"}, nil)
	cs, err := cl.Connect(t.Context(), &mcp.IOTransport{Reader: serverOut, Writer: serverIn}, nil)
	if err != nil {
		t.Fatalf("connecting to kubox mcp over stdio: %v\nstderr: %s", err, stderr.String())
	}

	served := make(chan struct{})
	go func() { f.serveNext(t); close(served) }()
	claimed := callTool(t, cs, "claim_sandbox", map[string]any{"template": "python"})
	<-served
	claim := claimed["claim"].(string)
	out := callTool(t, cs, "run_command", map[string]any{"claim": claim, "command": "echo over stdio"})
	if out["exit_code"] != float64(0) || out["stdout"] != "over stdio\n" {
		t.Errorf("run_command over stdio = %v", out)
	}

	_ = serverIn.Close() // the client goes away
	if code := <-exited; code != 0 {
		t.Errorf("kubox mcp exited %d when its client closed stdin; stderr:\n%s", code, stderr.String())
	}
	err = env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: claim}, &extv1beta1.SandboxClaim{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("claim %s after kubox mcp exited: %v; want it deleted", claim, err)
	}
}

func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var msg []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				msg = append(msg, tc.Text)
			}
		}
		t.Fatalf("%s(%v) failed: %s", tool, args, strings.Join(msg, "; "))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", tool, err))
	}
	return out
}
