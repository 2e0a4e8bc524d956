package sdk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const (
	agentImage = "kubox.local/kubox-agent:dev"
	// pendingImage marks Pods the Kubelet leaves Pending.
	pendingImage = "kubox.local/never-starts:dev"
	// readyTimeout bounds the SDK's waits in these tests.
	readyTimeout = time.Minute
)

// fixture is one test's namespace, with kubox running in it, a template "python" whose
// sandboxes run kubox-agent on agentPort, and an SDK client in direct mode.
type fixture struct {
	ns        string
	key       []byte
	agentPort int
	sdk       *kubox.Client
}

// setup creates a namespace for t, starts the framework's Kubelet (Pods at 127.0.0.1) and every kubox controller in it
// (with an agent image and token key), creates the template "python", and returns an SDK
// client for the namespace.
func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ns: env.NewNamespace(t), key: []byte(strings.Repeat("0123456789abcdef", 3)), agentPort: framework.FreePort(t)}
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, append(f.key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every Pod but those of pendingImage starts at once at 127.0.0.1, where the tests' agents
	// listen.
	env.StartKubelet(t, f.ns, framework.WithPodIP(framework.LoopbackIP)).SetFate(framework.ImageFate(pendingImage, framework.LeavePending))
	env.StartKubox(t, f.ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = keyFile
	})
	env.Create(t, f.template("python").Obj())
	c, err := kubox.New(env.Config, kubox.Options{Namespace: f.ns, Connection: kubox.ConnectDirect, ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	f.sdk = c
	return f
}

// template starts a SandboxTemplate whose sandboxes run kubox-agent on the fixture's port.
func (f *fixture) template(name string) *testutil.TemplateWrapper {
	w := testutil.MakeTemplate(name, f.ns).Unmanaged()
	w.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(f.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	return w
}

// startAgent serves sb's agent port on 127.0.0.1 with a real kubox-agent that requires the token
// the controller derived for sb's UID. Its files live in a temporary root. It stops when the
// test ends.
func (f *fixture) startAgent(t *testing.T, sb *kubox.Sandbox) {
	t.Helper()
	framework.StartAgent(t, agent.Config{Port: f.agentPort, Token: framework.AgentAuth(f.key, sb.Object().UID), Root: t.TempDir()})
}

// startAgentWithToken is startAgent with the token tok; it returns a function that stops the
// agent before the test ends.
func (f *fixture) startAgentWithToken(t *testing.T, tok string) (stop func()) {
	t.Helper()
	return framework.StartAgent(t, agent.Config{Port: f.agentPort, Token: auth.Fixed([]byte(tok)), Root: t.TempDir()}).Stop
}
