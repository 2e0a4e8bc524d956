package devenv

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
)

func TestRenderControllerConfigLoads(t *testing.T) {
	l := NewLayout(t.TempDir())
	if err := os.MkdirAll(l.Etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ControllerConfig, []byte(RenderControllerConfig(DefaultConfig(), l)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configv1alpha1.Load(l.ControllerConfig)
	if err != nil {
		t.Fatalf("the controller rejects the configuration up writes: %v", err)
	}
	if cfg.Agent.Image != AgentImage || cfg.Agent.ImagePullPolicy != corev1.PullNever || cfg.Agent.TokenKeyFile != l.AgentTokenKey {
		t.Errorf("agent settings = %+v, want the local image, never pulled, and the layout's key", cfg.Agent)
	}
	checkEgressProxyOnTheNode(t, cfg)
	if m := cfg.Controllers.Sandbox.Memory; m.NodeAPIURL != DefaultConfig().NodeAPIURL() || m.TokenFile != l.NodeToken {
		t.Errorf("memory settings = %+v, want kubox-node at %s with the layout's node token", m, DefaultConfig().NodeAPIURL())
	}
}

// checkEgressProxyOnTheNode: sandboxes with spec.egress are sent to the kubox-egress that
// EgressComponent runs on the node IP, and their NetworkPolicy opens exactly that address.
func checkEgressProxyOnTheNode(t *testing.T, cfg *configv1alpha1.ControllerConfiguration) {
	t.Helper()
	c := DefaultConfig()
	p := cfg.NetworkPolicy.EgressProxy
	if p.ProxyURL(cfg.ClusterDomain) != c.EgressProxyURL() || len(p.CIDRs) != 1 || p.CIDRs[0] != c.NodeIP().String()+"/32" {
		t.Errorf("egress proxy %s at %v, want %s at %s/32", p.ProxyURL(cfg.ClusterDomain), p.CIDRs, c.EgressProxyURL(), c.NodeIP())
	}
}

func TestEnsureKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	if err := EnsureKey(path); err != nil {
		t.Fatal(err)
	}
	first, err := contract.LoadAgentTokenKey(path)
	if err != nil {
		t.Fatalf("the controller rejects the key: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}
	if err := EnsureKey(path); err != nil {
		t.Fatal(err)
	}
	if again, _ := contract.LoadAgentTokenKey(path); string(again) != string(first) {
		t.Error("a second EnsureKey replaced the key: running sandboxes' tokens would stop matching")
	}
}
