//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubox-dev/kubox/api/contract"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

var (
	claims = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	pools  = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
)

// kubectlApply applies the repository's sample manifests in ns, as the README tells a user to.
func kubectlApply(t testing.TB, ns string, files ...string) {
	t.Helper()
	args := []string{"--kubeconfig", kubeconfig, "--namespace", ns, "apply"}
	for _, f := range files {
		args = append(args, "-f", filepath.Join(repoDir, f))
	}
	if out, err := exec.Command(kubectl, args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply %v: %v\n%s", files, err, out)
	}
}

func nestedString(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

func conditionTrue(obj *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condType {
			return m["status"] == "True"
		}
	}
	return false
}

// TestClaimPythonFromWarmPool follows the README: the python template and warm pool from
// config/samples, then a claim; the claim gets a pre-started member of the pool (launch type
// warm), and Python runs in it under gVisor.
func TestClaimPythonFromWarmPool(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	pythonPool(t, ns, 2)

	kubectlApply(t, ns, "config/samples/python-claim.yaml")
	var sandbox string
	waitFor(t, "claim my-python to be Ready", func(ctx context.Context) (bool, error) {
		claim, err := dyn.Resource(claims).Namespace(ns).Get(ctx, "my-python", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sandbox = nestedString(claim, "status", "sandbox", "name")
		return conditionTrue(claim, "Ready") && sandbox != "", nil
	})
	sb, err := dyn.Resource(sandboxes).Namespace(ns).Get(context.Background(), sandbox, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Reading the claimed Sandbox %s: %v", sandbox, err)
	}
	if lt := sb.GetLabels()["agents.x-k8s.io/launch-type"]; lt != "warm" {
		t.Errorf("Sandbox %s has launch-type %q, want warm: the claim should get a member of the pool", sandbox, lt)
	}
	if !strings.HasPrefix(sandbox, "python-") {
		t.Errorf("claimed Sandbox %s is not a member of pool python (named python-xxxxx)", sandbox)
	}
	out := kubectlExec(t, ns, sandbox, "python3", "-c",
		`import platform; print(platform.python_version(), "gvisor" in open("/proc/version").read().lower())`)
	if fields := strings.Fields(out); len(fields) != 2 || !strings.HasPrefix(fields[0], "3.") || fields[1] != "True" {
		t.Errorf("python3 in the claimed sandbox printed %q, want a Python 3 version and True (running under gVisor)", out)
	}
	// The template asks for kubox-agent: the claimed member runs Python through it too, with the
	// token the controller derived for that member when the pool created it.
	ip, tok := agentEndpoint(t, ns, sandbox)
	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), "http://"+ip+":7070")
	res, err := procs.RunProcess(context.Background(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"python3", "-c", "import os; print(os.getcwd(), 6*7)"}}}))
	if err != nil {
		t.Fatalf("RunProcess through the claimed sandbox's agent: %v", err)
	}
	if got := string(res.Msg.GetStdout()); got != "/workspace 42\n" {
		t.Errorf("python3 through the agent printed %q (stderr %q), want \"/workspace 42\"", got, res.Msg.GetStderr())
	}
	waitPoolReady(t, ns, "python", 2) // refilled
}
