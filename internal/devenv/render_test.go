package devenv

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubox-dev/kubox/api/contract"
)

func testEnv() (Config, Layout, Tools) {
	c := DefaultConfig()
	c.StateDir = "/var/lib/kubox-dev"
	l := NewLayout(c.StateDir)
	t := NewTools(ToolDirs{Etcd: "/c/etcd", Kubernetes: "/c/k8s", Containerd: "/c/cd", GVisor: "/c/gv", NetworkPolicies: "/c/knp"})
	return c, l, t
}

func TestRenderContainerd(t *testing.T) {
	_, l, tools := testEnv()
	got := RenderContainerd(l, tools)
	for _, want := range []string{
		`address = "/var/lib/kubox-dev/containerd/containerd.sock"`,
		`sandbox = "kubox.local/pause:dev"`,
		`restrict_oom_score_adj = true`,
		`netns_mounts_under_state_dir = true`,
		`runtime_path = "/c/gv/containerd-shim-runsc-v1"`,
		`ConfigPath = "/var/lib/kubox-dev/etc/runsc.toml"`,
		`pod_annotations = ["kubox.dev/restore-image"]`, // the patched shim's restore trigger
		`conf_dir = "/var/lib/kubox-dev/cni/net.d"`,
		`imports = []`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("containerd config lacks %q:\n%s", want, got)
		}
	}
}

func TestRenderRunsc(t *testing.T) {
	_, l, tools := testEnv()
	got := RenderRunsc(l, tools)
	for _, want := range []string{
		`binary_name = "/c/gv/runsc"`,
		`root = "/var/lib/kubox-dev/containerd/runsc"`,
		`kubox_snapshot_root = "/var/lib/kubox-dev/snapshots"`,
		`kubox_manifest_key = "/var/lib/kubox-dev/manifest-key/manifest.key"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("runsc shim options lack %q:\n%s", want, got)
		}
	}
}

func TestRenderCNI(t *testing.T) {
	c, l, _ := testEnv()
	var got map[string]any
	if err := json.Unmarshal([]byte(RenderCNI(c, l)), &got); err != nil {
		t.Fatalf("CNI config is not JSON: %v", err)
	}
	bridge := got["plugins"].([]any)[0].(map[string]any)
	ipam := bridge["ipam"].(map[string]any)
	want := map[string]any{"bridge": "kuboxbr0", "ipMasq": false, "routes": nil,
		"range": []any{map[string]any{"subnet": "10.77.0.0/24", "gateway": "10.77.0.1"}}}
	gotSel := map[string]any{"bridge": bridge["bridge"], "ipMasq": bridge["ipMasq"], "routes": ipam["routes"],
		"range": ipam["ranges"].([]any)[0]}
	if diff := cmp.Diff(want, gotSel); diff != "" {
		t.Errorf("CNI bridge (-want +got):\n%s", diff)
	}
}

func TestRenderKubelet(t *testing.T) {
	tests := map[string]struct {
		v1       bool
		wantFail any
	}{
		"cgroup v1 host": {v1: true, wantFail: false},
		"cgroup v2 host": {v1: false, wantFail: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c, l, _ := testEnv()
			var got map[string]any
			if err := yaml.Unmarshal([]byte(RenderKubelet(c, l, Host{CgroupV1: tc.v1})), &got); err != nil {
				t.Fatalf("kubelet config is not YAML: %v", err)
			}
			want := map[string]any{"cgroupRoot": "/kubox", "failCgroupV1": tc.wantFail, "address": "10.77.0.1",
				"port": float64(11250), "healthzPort": float64(11248), "cgroupDriver": "cgroupfs",
				"containerRuntimeEndpoint": "unix:///var/lib/kubox-dev/containerd/containerd.sock",
				"tlsCertFile":              "/var/lib/kubox-dev/pki/kubelet.crt", "tlsPrivateKeyFile": "/var/lib/kubox-dev/pki/kubelet.key"}
			sel := map[string]any{}
			for k := range want {
				sel[k] = got[k]
			}
			if diff := cmp.Diff(want, sel); diff != "" {
				t.Errorf("kubelet config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderKubeconfig(t *testing.T) {
	c, _, _ := testEnv()
	var got struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
				CA     string `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Current string `json:"current-context"`
	}
	rendered := RenderKubeconfig(c, []byte("ca"), []byte("crt"), []byte("key"), "s3cret")
	if err := yaml.Unmarshal([]byte(rendered), &got); err != nil {
		t.Fatal(err)
	}
	if got.Clusters[0].Cluster.Server != "https://127.0.0.1:16443" || got.Clusters[0].Cluster.CA != "Y2E=" || got.Current != "kubox-dev" {
		t.Errorf("kubeconfig = %+v", got)
	}
	// client-go loads it: the admin user has the token, the cluster names the router.
	cfg, err := clientcmd.Load([]byte(rendered))
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.AuthInfos["kubox-admin"]; u == nil || u.Token != "s3cret" || len(u.ClientCertificateData) == 0 {
		t.Errorf("admin user = %+v, want the client certificate and the token", u)
	}
	ext, ok := cfg.Clusters["kubox-dev"].Extensions[contract.RouterKubeconfigExtension].(*runtime.Unknown)
	if !ok || !strings.Contains(string(ext.Raw), `"url":"http://127.0.0.1:16090"`) {
		t.Errorf("router extension = %#v, want the router's URL", cfg.Clusters["kubox-dev"].Extensions)
	}
}

func TestRenderTokenAuthFile(t *testing.T) {
	got := RenderTokenAuthFile("s3cret")
	if want := "s3cret,kubox-admin,kubox-admin,\"system:masters\"\n"; got != want {
		t.Errorf("token file = %q, want %q", got, want)
	}
}

func TestPlanFlags(t *testing.T) {
	c, l, tools := testEnv()
	plan := Plan(c, l, tools)
	tests := map[string][]string{
		Etcd:              {"--listen-client-urls=http://127.0.0.1:12379", "--listen-peer-urls=http://127.0.0.1:12380"},
		APIServer:         {"--secure-port=16443", "--bind-address=127.0.0.1", "--service-cluster-ip-range=10.78.0.0/24"},
		ControllerManager: {"--secure-port=16257", "--enable-hostpath-provisioner", "--bind-address=127.0.0.1"},
		Scheduler:         {"--secure-port=16259"},
		Kubelet:           {"--node-ip=10.77.0.1", "--root-dir=/var/lib/kubox-dev/kubelet", "--hostname-override=kubox-node"},
		NetworkPolicies: {"--kubeconfig=/var/lib/kubox-dev/kubeconfig", "--hostname-override=kubox-node",
			"--nfqueue-id=177", "--metrics-bind-address=127.0.0.1:16093", "--disable-nri"},
	}
	for name, flags := range tests {
		for _, f := range flags {
			if !contains(plan[name].Argv, f) {
				t.Errorf("%s lacks %s: %v", name, f, plan[name].Argv)
			}
		}
	}
	for _, name := range StartOrder {
		if name == Egress || name == NodeAPI || name == Controller || name == Router {
			continue // built from the checkout (TestKuboxComponents)
		}
		if plan[name].Name != name || !strings.HasPrefix(plan[name].Argv[0], "/c/") {
			t.Errorf("component %s is planned as %+v", name, plan[name])
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestKuboxComponents(t *testing.T) {
	c, l, _ := testEnv()
	tests := map[string]struct {
		comp  Component
		flags []string
	}{
		Controller: {ControllerComponent("/bin/kubox-controller", c, l), []string{
			"--health-probe-bind-address=127.0.0.1:16081", "--config=/var/lib/kubox-dev/etc/kubox-controller.yaml"}},
		Router: {RouterComponent("/bin/kubox-router", c, l), []string{
			"--http-bind-address=127.0.0.1:16090", "--health-probe-bind-address=127.0.0.1:16092",
			"--agent-token-key-file=/var/lib/kubox-dev/etc/agent-token-key", "--preview-domain=localhost", "--e2b-domain=e2b.localhost"}},
		Egress: {EgressComponent("/bin/kubox-egress", c, l), []string{
			"--proxy-bind-address=10.77.0.1:16094", "--health-probe-bind-address=127.0.0.1:16096",
			"--hosts-file=/var/lib/kubox-dev/etc/egress-hosts", "--upstream-ca-file=/var/lib/kubox-dev/pki/egress-test-ca.crt"}},
		NodeAPI: {NodeAPIComponent("/bin/kubox-node", c, l, Tools{Runsc: "/c/runsc"}), []string{
			"--api-bind-address=127.0.0.1:16097", "--token-file=/var/lib/kubox-dev/etc/node-token",
			"--snapshot-root=/var/lib/kubox-dev/snapshots", "--snapshot-store=/var/lib/kubox-dev/snapshot-store", "--runsc=/c/runsc", "--runsc-root=/var/lib/kubox-dev/containerd/runsc",
			"--containerd-state=/var/lib/kubox-dev/containerd/state", "--kubelet-root=/var/lib/kubox-dev/kubelet",
			"--manifest-key-file=/var/lib/kubox-dev/manifest-key/manifest.key"}},
	}
	for name, tc := range tests {
		if tc.comp.Name != name {
			t.Errorf("component %s is named %s", name, tc.comp.Name)
		}
		for _, f := range tc.flags {
			if !contains(tc.comp.Argv, f) {
				t.Errorf("%s lacks %s: %v", name, f, tc.comp.Argv)
			}
		}
	}
	if !contains(Plan(c, l, Tools{})[APIServer].Argv, "--token-auth-file=/var/lib/kubox-dev/etc/tokens.csv") {
		t.Errorf("kube-apiserver does not read the admin token file")
	}
}
