package pysdk

import (
	"testing"

	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/clientenv"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// testsDir holds the Python SDK's integration tests, relative to the repository's root.
const testsDir = "sdk/python/tests/integration"

// TestPythonSDK runs sdk/python/tests/integration with pytest against a real environment
// (clientenv; its Env.Vars lists the variables that describe it to the tests). PYTHONPATH is
// sdk/python/src; KUBOX_ROUTER_URL is not inherited, PYTEST_ADDOPTS is.
func TestPythonSDK(t *testing.T) {
	testutil.RequirePytest(t)
	e := clientenv.Setup(t, env)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	testutil.RunPytest(t, root, testsDir, e.Vars()...)
}
