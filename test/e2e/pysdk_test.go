//go:build e2e

package e2e

import (
	"testing"

	"github.com/kubox-dev/kubox/internal/testutil"
)

// TestPythonSDK runs the Python SDK's end-to-end tests (sdk/python/tests/e2e) in a namespace
// with the sample python pool ready: warm gVisor sandboxes claimed, used (run, stream with stdin,
// an 8 MiB file round trip) and released through the in-cluster kubox-router, with nothing set but
// KUBECONFIG (the router's URL comes from its kubox.dev/router extension).
func TestPythonSDK(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	pythonPool(t, ns, 2)
	testutil.RunPytest(t, repoDir, "sdk/python/tests/e2e", "KUBECONFIG="+kubeconfig, "KUBOX_TEST_NAMESPACE="+ns)
}
