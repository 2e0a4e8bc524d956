package sdk

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubox-dev/kubox/internal/mcpserver"
)

// TestMCPRunCodeKeepsState: `kubox mcp`'s run_code runs in the claim's code interpreter, through
// the real router, so a variable one call sets is there in the next (per language: bash has its
// own), an exception comes back with its traceback, and a matplotlib figure comes back as an MCP
// image.
func TestMCPRunCodeKeepsState(t *testing.T) {
	f := setupCode(t)
	s := mcpserver.New(mcpserver.Config{Namespace: f.ns, RouterURL: f.routerURL, API: env.Config})
	t.Cleanup(func() { s.Close(context.Background()) })
	h, err := s.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dev, err := connectMCP(t, srv.URL, f.devToken, "")
	if err != nil {
		t.Fatal(err)
	}
	claim := dev.mustCall(t, "claim_sandbox", map[string]any{"pool": "python"})["claim"].(string)

	dev.mustCall(t, "run_code", map[string]any{"claim": claim, "code": "x = 41"})
	out := dev.mustCall(t, "run_code", map[string]any{"claim": claim, "code": "print('adding')\nx + 1"})
	if r := mainResult(out); r["text"] != "42" || out["stdout"] != "adding\n" {
		t.Errorf("run_code x + 1 after x = 41 in another call = %v; want the main result 42 and stdout adding", out)
	}
	if got := dev.waitProgress(0, "stdout: adding"); got != "" {
		t.Errorf("progress notifications %q; want stdout streamed", got)
	}
	dev.mustCall(t, "run_code", map[string]any{"claim": claim, "language": "bash", "code": "cd /tmp && N=6"})
	if out := dev.mustCall(t, "run_code", map[string]any{"claim": claim, "language": "bash", "code": "echo $((N*7)) $PWD"}); out["stdout"] != "42 /tmp\n" {
		t.Errorf("run_code bash after N=6 and cd /tmp = %v; want stdout \"42 /tmp\"", out)
	}
	out = dev.mustCall(t, "run_code", map[string]any{"claim": claim, "code": "def f():\n    return x / 0\nf()"})
	if e, _ := out["error"].(map[string]any); e["name"] != "ZeroDivisionError" || !strings.Contains(e["traceback"].(string), "return x / 0") {
		t.Errorf("run_code 1/0 = %v; want ZeroDivisionError with a traceback", out)
	}
	if _, err := dev.call(t, "run_code", map[string]any{"claim": claim, "language": "cobol", "code": "x"}); err == nil ||
		!strings.Contains(err.Error(), "python, bash, node") {
		t.Errorf("run_code cobol: %v; want an error listing the languages", err)
	}

	params := &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"claim": claim,
		"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\n'drawn'"}}
	res, err := dev.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_code with a matplotlib figure = %+v, %v", res, err)
	}
	var pngs int
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok && img.MIMEType == "image/png" && bytes.HasPrefix(img.Data, []byte("\x89PNG\r\n\x1a\n")) {
			pngs++
		}
	}
	if pngs != 1 {
		t.Errorf("run_code with a matplotlib figure: %d PNG image contents in %+v; want 1", pngs, res.Content)
	}
}

// mainResult is the result of run_code's output that is the main one.
func mainResult(out map[string]any) map[string]any {
	rs, _ := out["results"].([]any)
	for _, r := range rs {
		if m, _ := r.(map[string]any); m["is_main_result"] == true {
			return m
		}
	}
	return nil
}
