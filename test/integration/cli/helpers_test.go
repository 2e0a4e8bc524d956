package cli

import (
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/cli"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const agentImage = "kubox.local/kubox-agent:dev"

// fixture is one test's namespace with kubox running in it, and a kubeconfig for the CLI.
type fixture struct {
	ns         string
	key        []byte
	agentPort  int
	kubeconfig string
	kubelet    *framework.Kubelet

	mu     sync.Mutex
	served map[string]bool // Pods whose agent serve started
}

// setup creates a namespace for t, starts the framework's Kubelet and every kubox controller in
// it (with an agent image and a token key), and writes a kubeconfig for the CLI.
func setup(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{ns: env.NewNamespace(t), key: []byte(strings.Repeat("0123456789abcdef", 3)), agentPort: framework.FreePort(t),
		kubeconfig: filepath.Join(dir, "kubeconfig")}
	keyFile := filepath.Join(dir, "agent-token-key")
	if err := os.WriteFile(keyFile, append(f.key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	f.kubelet = env.StartKubelet(t, f.ns, framework.WithPodIP(framework.LoopbackIP))
	env.StartKubox(t, f.ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = keyFile
	})
	return f
}

// withAgents makes the Kubelet leave every Pod Pending until serve has started its agent: then
// the Kubelet starts it, at 127.0.0.1.
func (f *fixture) withAgents() *fixture {
	f.kubelet.SetFate(f.servedFate())
	return f
}

// servedFate runs the Pods whose agent serve started and leaves the others Pending.
func (f *fixture) servedFate() func(*corev1.Pod) framework.Fate {
	f.mu.Lock()
	served := maps.Clone(f.served)
	f.mu.Unlock()
	return func(pod *corev1.Pod) framework.Fate {
		if served[pod.Name] {
			return framework.RunReady
		}
		return framework.LeavePending
	}
}

// template is a SandboxTemplate whose sandboxes run kubox-agent on the fixture's port.
func (f *fixture) template(name string) *testutil.TemplateWrapper {
	w := testutil.MakeTemplate(name, f.ns).Unmanaged()
	w.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(f.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	return w
}

// sandbox creates a Sandbox, without a claim, whose Pod runs kubox-agent on the fixture's port.
func (f *fixture) sandbox(t *testing.T, name string) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := testutil.MakeSandbox(name, f.ns).Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(f.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	env.Create(t, sb)
	return sb
}

// result is what one kubox command printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// kubox runs the CLI in-process against the test's namespace, connecting directly to agents.
func (f *fixture) kubox(t *testing.T, stdin io.Reader, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	return f.kuboxContext(t.Context(), stdin, stdout, stderr, args...)
}

// kuboxContext is kubox with ctx standing for the process's signals: cancelling it is Ctrl-C.
func (f *fixture) kuboxContext(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args ...string) int {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	args = append([]string{"--kubeconfig", f.kubeconfig, "-n", f.ns, "--connection", "direct", "--ready-timeout", "1m"}, args...)
	return cli.Execute(ctx, args, stdin, stdout, stderr)
}

// run runs the CLI with no stdin and returns what it printed.
func (f *fixture) run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := f.kubox(t, nil, &out, &errOut, args...)
	return result{out.String(), errOut.String(), code}
}

// mustRun runs the CLI and fails the test unless it exits 0.
func (f *fixture) mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := f.run(t, args...)
	if r.code != 0 {
		t.Fatalf("kubox %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// serve starts a real kubox-agent for the Sandbox called name (whose Pod exists or will) on the
// fixture's port, with the token the controller derived for the sandbox's UID and its files in a
// temporary root, and then lets the Kubelet start the sandbox's Pod (Running and Ready at
// 127.0.0.1; the CLI waits for it). It returns the agent's file root. The agent stops when the
// test ends.
func (f *fixture) serve(t *testing.T, name string) string {
	t.Helper()
	pod := framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}, nil)
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, name)
	a := framework.StartAgent(t, agent.Config{Port: f.agentPort, Token: framework.AgentAuth(f.key, sb.UID), Root: t.TempDir()})
	f.mu.Lock()
	if f.served == nil {
		f.served = map[string]bool{}
	}
	f.served[pod.Name] = true
	f.mu.Unlock()
	f.kubelet.SetFate(f.servedFate())
	return a.Root
}

// serveNext waits for the namespace's first Pod that the test has not started, and serves its
// sandbox (kubox names a sandbox's Pod after it).
func (f *fixture) serveNext(t *testing.T) string {
	t.Helper()
	var name string
	framework.Eventually(t, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := env.Client.List(t.Context(), pods, client.InNamespace(f.ns)); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Status.Phase == "" || p.Status.Phase == corev1.PodPending {
				name = p.Name
				return true, ""
			}
		}
		return false, "no Pending Pod"
	})
	return f.serve(t, name)
}
