package codeinterp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// e2bDir holds the stock client's test (codeinterp.test.mjs) and its pinned npm packages
// (make e2b-deps), from this package's directory.
var e2bDir = filepath.Join("..", "..", "e2b")

// TestStockJSClient drives @e2b/code-interpreter 2.8.0, unchanged, against the agent: runCode,
// its streaming callbacks, results, errors, contexts, a timeout, three languages
// (test/e2b/codeinterp.test.mjs).
func TestStockJSClient(t *testing.T) {
	if _, err := os.Stat(filepath.Join(e2bDir, "node_modules", "@e2b", "code-interpreter", "package.json")); err != nil {
		t.Fatalf("@e2b/code-interpreter is not installed in test/e2b (%v): run make e2b-deps", err)
	}
	s := startSandbox(t)
	cmd := exec.CommandContext(guardCtx(t), "node", "--test", "--test-reporter=tap", "codeinterp.test.mjs")
	cmd.Dir = e2bDir
	cmd.Env = append(os.Environ(), "KUBOX_CI_URL="+s.url, "KUBOX_CI_TOKEN="+testToken, "KUBOX_CI_ROOT="+s.root)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test codeinterp.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the stock client failed against the agent: %v", err)
	}
	if tap := string(out); !strings.Contains(tap, "# fail 0") || strings.Contains(tap, "# pass 0\n") {
		t.Errorf("the stock client's suite did not pass every test (see the output above)")
	}
}
