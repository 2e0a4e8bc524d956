//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
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

// TestTypeScriptSDK runs the TypeScript SDK's end-to-end test (sdk/typescript/src/e2e, built
// into dist/e2e by `make ts-build`) in a namespace with the sample python pool ready, with nothing
// set but KUBECONFIG, as TestPythonSDK does for the Python SDK.
func TestTypeScriptSDK(t *testing.T) {
	requireController(t)
	suite := filepath.Join(repoDir, "sdk", "typescript", "dist", "e2e", "node.e2e.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("the TypeScript SDK is not built (%v): run `make ts-build` (make test-e2e does)", err)
	}
	ns := namespace(t)
	pythonPool(t, ns, 2)
	cmd := exec.CommandContext(t.Context(), "node", "--test", "--test-reporter=tap", suite)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBOX_TEST_NAMESPACE="+ns)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", suite, out)
	if err != nil {
		t.Fatalf("the TypeScript SDK's end-to-end test failed: %v", err)
	}
	if tap := string(out); !strings.Contains(tap, "# pass 1") || !strings.Contains(tap, "# fail 0") {
		t.Errorf("the end-to-end test did not run (see the output above)")
	}
}

// TestGoSDKPortForward is the Go SDK's default outside a cluster when no router URL is known:
// a port-forward (client-go, SPDY) to a ready kubox-router Pod of the in-cluster install, found
// through its Service's EndpointSlices. A claim, a command and an 8 MiB file round trip go
// through it.
func TestGoSDKPortForward(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	pythonPool(t, ns, 1)
	c, err := kubox.New(restConfig, kubox.Options{Namespace: ns, Connection: kubox.ConnectPortForward})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	ctx := t.Context()
	sb, err := c.Claim(ctx, kubox.FromPool("python"))
	if err != nil {
		t.Fatalf("Claim through a port-forward: %v", err)
	}
	defer func() { _ = sb.Close(context.Background()) }()
	res, err := sb.Run(ctx, "python3", "-c", "print('forwarded')")
	if err != nil || string(res.Stdout) != "forwarded\n" {
		t.Fatalf("Run through a port-forward = %+v, %v; want forwarded", res, err)
	}
	data := make([]byte, 8<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := sb.Files().WriteFile(ctx, "/tmp/pf.bin", data, 0o644); err != nil {
		t.Fatalf("WriteFile through a port-forward: %v", err)
	}
	back, err := sb.Files().ReadFile(ctx, "/tmp/pf.bin")
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("ReadFile through a port-forward: %d bytes, %v; want the %d written", len(back), err, len(data))
	}
}
