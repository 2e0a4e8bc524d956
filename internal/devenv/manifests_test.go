package devenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
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

// TestDevNodeAPIMatchesProcessMode: config/dev runs kubox-node with the flags the process mode
// gives it (NodeAPIComponent, with the runsc of <state>/bin and the token from the Secret), from
// the image `up` imports, with a hostPath at the same path for every folder a flag names.
func TestDevNodeAPIMatchesProcessMode(t *testing.T) {
	// config/dev is for root, whose state folder is /var/lib/kubox-dev
	c, l := DefaultConfig(), NewLayout("/var/lib/kubox-dev")
	data, err := os.ReadFile(filepath.Join(configDir, "dev", "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	args := NodeAPIComponent("kubox-node", c, l, Tools{Runsc: filepath.Join(l.Bin, "runsc")}).Argv[1:]
	for _, arg := range args {
		if strings.HasPrefix(arg, "--token-file=") { // in the cluster, the Secret kubox-node-token
			arg = "--token-file=/etc/kubox-node-token/token"
		}
		if !strings.Contains(got, "  - "+arg+"\n") {
			t.Errorf("config/dev/node.yaml lacks the argument %q of the process mode", arg)
		}
		_, path, _ := strings.Cut(arg, "=")
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "/etc/") {
			continue
		}
		if !strings.Contains(got, "hostPath: {path: "+path) && !strings.Contains(got, "hostPath: {path: "+filepath.Dir(path)) {
			t.Errorf("config/dev/node.yaml mounts no hostPath at %s (or its folder), which %s names", path, arg)
		}
	}
	kust, err := os.ReadFile(filepath.Join(configDir, "dev", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kust), "newName: "+strings.TrimSuffix(NodeImage, ":dev")) {
		t.Errorf("config/dev/kustomization.yaml does not run %s", NodeImage)
	}
}

// TestNodeDaemonSetMatchesTheContract: config/node's kubox-node listens on the port the controller
// dials (contract.DefaultNodeAPIPort), runs on the nodes contract.SnapshotNodeLabel marks, reads
// the token from the Secret the controller mounts at its memory.tokenFile, and mounts each hostPath
// at the path it has on the host (runsc and the shim open what kubox-node names).
func TestNodeDaemonSetMatchesTheContract(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(configDir, "node", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := yaml.UnmarshalStrict(data, ds); err != nil {
		t.Fatalf("config/node/daemonset.yaml: %v", err)
	}
	spec := ds.Spec.Template.Spec
	if spec.NodeSelector[contract.SnapshotNodeLabel] != "true" || !spec.HostNetwork || !spec.HostPID {
		t.Errorf("nodeSelector %v, hostNetwork %v, hostPID %v; want %s=true and the host's network and PIDs",
			spec.NodeSelector, spec.HostNetwork, spec.HostPID, contract.SnapshotNodeLabel)
	}
	ctr := spec.Containers[0]
	if want := fmt.Sprintf("--api-bind-address=:%d", contract.DefaultNodeAPIPort); !slices.Contains(ctr.Args, want) {
		t.Errorf("args %v lack %s", ctr.Args, want)
	}
	cfg, err := configv1alpha1.Load(filepath.Join(configDir, "manager", "controller_config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := cfg.Controllers.Sandbox.Memory.TokenFile
	if tokenFile == "" || !slices.Contains(ctr.Args, "--token-file="+tokenFile) {
		t.Errorf("the controller reads the node token at %q; kubox-node's args %v do not read it there", tokenFile, ctr.Args)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range ctr.VolumeMounts {
		v := volumes[m.Name]
		switch {
		case v.Secret != nil:
			if v.Secret.SecretName != NodeTokenSecret || filepath.Join(m.MountPath, "token") != tokenFile {
				t.Errorf("Secret %s at %s; want %s at %s", v.Secret.SecretName, m.MountPath, NodeTokenSecret, filepath.Dir(tokenFile))
			}
		case v.HostPath != nil && v.HostPath.Path != m.MountPath:
			t.Errorf("hostPath %s mounted at %s; want the same path", v.HostPath.Path, m.MountPath)
		}
	}
}
