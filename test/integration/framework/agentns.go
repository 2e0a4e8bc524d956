package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// AgentNamespace is a test namespace whose sandboxes run real kubox-agents (StartAgentNamespace).
type AgentNamespace struct {
	// NS is the namespace.
	NS string
	// Key is the agent token key kubox and the agents share; StartRouter takes it.
	Key []byte
	// Port is the agents' port: a template's spec.agent.port (Template sets it).
	Port int
	// Kubelet is the namespace's kubelet (SetFate for an image whose Pods must stay Pending).
	Kubelet *Kubelet
}

// StartAgentNamespace starts, in a new namespace: a Kubelet that gives each Pod a loopback IP of
// its own (and opts); for each sandbox a real kubox-agent on one free port that also serves the
// code interpreter on its contract port (49999), as kubox-agent does by default, with the host's
// interpreters (HostInterpretersFirst), its configuration then changed by configure (nil: none);
// and kubox, whose sandboxes' agent image is agentImage and whose agent tokens are signed with
// Key. It creates no template, pool, router or RBAC: the caller's test decides those.
func (e *Env) StartAgentNamespace(t *testing.T, agentImage string, configure func(*agent.Config), opts ...KubeletOption) *AgentNamespace {
	t.Helper()
	a := &AgentNamespace{NS: e.NewNamespace(t), Key: []byte(strings.Repeat("0123456789abcdef", 3)), Port: FreePort(t)}
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, append(a.Key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Kubelet = e.StartKubelet(t, a.NS, append([]KubeletOption{WithLoopbackPodIPs()}, opts...)...)
	e.ServeSandboxAgents(t, a.NS, a.Key, a.Port, func(c *agent.Config) {
		c.CodeInterpreterPort = contract.E2BCodeInterpreterPort
		c.Process.Env = HostInterpretersFirst()
		if configure != nil {
			configure(c)
		}
	})
	e.StartKubox(t, a.NS, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = keyFile
	})
	return a
}

// Template is a SandboxTemplate in a's namespace whose sandboxes run a's agents (unmanaged, on
// a.Port, no compatibility port); the caller creates it.
func (a *AgentNamespace) Template(name string) *testutil.TemplateWrapper {
	w := testutil.MakeTemplate(name, a.NS).Unmanaged()
	w.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(a.Port)), CompatibilityPort: ptr.To[int32](0)}
	return w
}
