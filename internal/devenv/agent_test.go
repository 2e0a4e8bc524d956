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
	if err := os.WriteFile(l.ControllerConfig, []byte(RenderControllerConfig(l)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configv1alpha1.Load(l.ControllerConfig)
	if err != nil {
		t.Fatalf("the controller rejects the configuration up writes: %v", err)
	}
	if cfg.Agent.Image != AgentImage || cfg.Agent.ImagePullPolicy != corev1.PullNever || cfg.Agent.TokenKeyFile != l.AgentTokenKey {
		t.Errorf("agent settings = %+v, want the local image, never pulled, and the layout's key", cfg.Agent)
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
