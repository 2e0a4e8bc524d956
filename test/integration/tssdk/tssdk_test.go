package tssdk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/test/integration/clientenv"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// suite is the compiled test file of the TypeScript SDK that needs a real environment.
const suite = "dist/test/cluster.test.js"

// TestTypeScriptSDK runs the TypeScript SDK's cluster tests with Node's test runner against a
// real environment (clientenv; Env.Vars describes it). The suite skips itself without those
// variables, so the test also checks that it ran and none of its tests was skipped.
func TestTypeScriptSDK(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "sdk", "typescript")
	if _, err := os.Stat(filepath.Join(dir, suite)); err != nil {
		t.Fatalf("%s is not built (%v): run `make test-ts`, which installs the SDK's dependencies and builds it", suite, err)
	}
	e := clientenv.Setup(t, env)
	cmd := exec.CommandContext(t.Context(), "node", "--test", "--test-concurrency=1", "--test-reporter=tap", suite)
	cmd.Dir = dir
	cmd.Env = append(withoutRouterURL(os.Environ()), e.Vars()...)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", suite, out)
	if err != nil {
		t.Fatalf("the TypeScript SDK's cluster tests failed: %v", err)
	}
	if tap := string(out); !strings.Contains(tap, "# skipped 0") || !strings.Contains(tap, "# fail 0") || strings.Contains(tap, "# pass 0") {
		t.Errorf("the suite did not run every test against the environment (see the output above)")
	}
}

// withoutRouterURL drops KUBOX_ROUTER_URL, which would point the SDK at another router.
func withoutRouterURL(environ []string) []string {
	out := environ[:0:0]
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "KUBOX_ROUTER_URL=") {
			out = append(out, kv)
		}
	}
	return out
}
