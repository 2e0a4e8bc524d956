package devenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// configDir is the checkout's config/ (kustomize), seen from this package.
var configDir = filepath.Join("..", "..", "config")

// TestManifestControllerConfigsLoad: the ControllerConfiguration files the ConfigMap
// kubox-controller-config holds are ones the controller accepts, and both point at the key the
// Deployment mounts.
func TestManifestControllerConfigsLoad(t *testing.T) {
	for _, file := range []string{"manager/controller_config.yaml", "dev/controller_config.yaml"} {
		t.Run(file, func(t *testing.T) {
			cfg, err := configv1alpha1.Load(filepath.Join(configDir, file))
			if err != nil {
				t.Fatalf("the controller rejects %s: %v", file, err)
			}
			if cfg.Agent.TokenKeyFile != InClusterKeyFile || cfg.Agent.Image == "" || !*cfg.LeaderElection.Enabled {
				t.Errorf("agent %+v, leader election %v; want the key at %s, an image, leader election on",
					cfg.Agent, *cfg.LeaderElection.Enabled, InClusterKeyFile)
			}
		})
	}
}

// TestDevOverlayMatchesTheEnvironment: config/dev listens where `kubox dev` probes and the
// kubeconfig points (DefaultConfig's ports), reaches the API server on its port, and runs the
// images `up` imports.
func TestDevOverlayMatchesTheEnvironment(t *testing.T) {
	c := DefaultConfig()
	cfg, err := configv1alpha1.Load(filepath.Join(configDir, "dev", "controller_config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Metrics.BindAddress, fmt.Sprintf("127.0.0.1:%d", c.Ports.ControllerMetrics); got != want {
		t.Errorf("controller metrics on %s, want %s", got, want)
	}
	if got, want := cfg.Health.BindAddress, fmt.Sprintf("127.0.0.1:%d", c.Ports.ControllerHealth); got != want {
		t.Errorf("controller probes on %s, want %s", got, want)
	}
	if cfg.Agent.Image != AgentImage || cfg.Agent.ImagePullPolicy != corev1.PullNever {
		t.Errorf("agent image %s (%s), want %s, never pulled", cfg.Agent.Image, cfg.Agent.ImagePullPolicy, AgentImage)
	}
	checkEgressProxyOnTheNode(t, cfg)
	if m := cfg.Controllers.Sandbox.Memory; m.NodeAPIURL != c.NodeAPIURL() || m.TokenFile != "/etc/kubox-node-token/token" {
		t.Errorf("memory settings = %+v, want kubox-node at %s with the token the dev overlay mounts", m, c.NodeAPIURL())
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(configDir, "dev", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	apiPort := fmt.Sprintf("{name: KUBERNETES_SERVICE_PORT, value: \"%d\"}", c.Ports.APIServer)
	for file, want := range map[string][]string{
		"controller.yaml": {apiPort, "{name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}",
			fmt.Sprintf("containerPort: %d}", c.Ports.ControllerMetrics), fmt.Sprintf("containerPort: %d}", c.Ports.ControllerHealth)},
		"router.yaml": {apiPort, "{name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}",
			fmt.Sprintf("--http-bind-address=127.0.0.1:%d", c.Ports.RouterHTTP),
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", c.Ports.RouterMetrics),
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", c.Ports.RouterHealth),
			"--agent-token-key-file=" + InClusterKeyFile, "--preview-domain=" + PreviewDomain, "--e2b-domain=" + E2BDomain},
		"kustomization.yaml": {"newName: " + strings.TrimSuffix(ControllerImage, ":dev"),
			"newName: " + strings.TrimSuffix(RouterImage, ":dev"), "newTag: dev"},
	} {
		got := read(file)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("config/dev/%s lacks %q", file, w)
			}
		}
	}
}
