package devenv

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/kubox-dev/kubox/api/contract"
)

// SandboxImage is the pause image every pod sandbox uses; it is built locally (images.go).
const SandboxImage = "kubox.local/pause:dev"

// BusyboxImage is the general-purpose local image for tests and examples.
const BusyboxImage = "kubox.local/busybox:dev"

// Host is what `up` observed about the machine and what the rendered configs depend on.
type Host struct {
	// CgroupV1 is true on a v1 or hybrid cgroup host; the kubelet then needs failCgroupV1: false.
	CgroupV1 bool
}

var containerdTmpl = template.Must(template.New("containerd").Parse(`# kubox dev: containerd {{.Version}} for the local node (generated; edits are overwritten by kubox dev up)
version = 4
root = "{{.L.ContainerdRoot}}"
state = "{{.L.ContainerdState}}"
imports = []   # never pick up the host's /etc/containerd/conf.d

[plugins."io.containerd.server.v1.grpc"]
  address = "{{.L.ContainerdSocket}}"

[plugins."io.containerd.nri.v1.nri"]
  disable = true

[plugins."io.containerd.internal.v1.opt"]
  path = "{{.L.Root}}/containerd/opt"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{{.SandboxImage}}"

[plugins."io.containerd.cri.v1.runtime"]
  # root may lack CAP_SYS_RESOURCE (Firecracker VMs): never ask runc to lower oom_score_adj
  restrict_oom_score_adj = true
  # network namespaces live below the state dir, not in the shared /run/netns
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = "{{.T.ShimRunc}}"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{{.T.Runc}}"
    # gVisor through its own shim (patched to tolerate a root without CAP_SYS_RESOURCE)
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
      runtime_path = "{{.T.ShimRunsc}}"
      # kubox's patch to the shim restores a Pod carrying this annotation from a checkpoint image
      pod_annotations = ["{{.RestoreAnnotation}}"]
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runsc.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = "{{.L.Etc}}/runsc.toml"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{{.T.CNIBinDir}}"]
    conf_dir = "{{.L.CNIConfDir}}"
    max_conf_num = 1
`))

// RenderContainerd renders containerd's config for the local node.
func RenderContainerd(l Layout, t Tools) string {
	return execute(containerdTmpl, map[string]any{"L": l, "T": t, "SandboxImage": SandboxImage, "Version": "2.4",
		"RestoreAnnotation": contract.RestoreImageAnnotation})
}

// RenderRunsc renders the gVisor shim's options file (containerd passes its path as ConfigPath).
func RenderRunsc(l Layout, t Tools) string {
	return fmt.Sprintf(`# gVisor shim options for the kubox local node (generated)
binary_name = %q
root = %q
log_level = "info"
log_path = %q
kubox_snapshot_root = %q
kubox_manifest_key = %q
[runsc_config]
`, t.Runsc, l.RunscRoot, l.RunscLogs, l.Snapshots, l.ManifestKey)
}

type cniConf struct {
	CNIVersion string           `json:"cniVersion"`
	Name       string           `json:"name"`
	Plugins    []map[string]any `json:"plugins"`
}

// RenderCNI renders a bridge + host-local network. No masquerade, no portmap and no default
// route: pods reach only the bridge subnet (each other and the host's gateway address).
func RenderCNI(c Config, l Layout) string {
	conf := cniConf{CNIVersion: "0.4.0", Name: "kubox", Plugins: []map[string]any{{
		"type": "bridge", "bridge": c.Bridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
		"ipam": map[string]any{
			"type": "host-local", "dataDir": l.CNIIPAMDir,
			"ranges": [][]map[string]string{{{"subnet": c.PodSubnet.String(), "gateway": c.NodeIP().String()}}},
		},
	}, {"type": "loopback"}}}
	out, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		panic(err) // static types; cannot fail
	}
	return string(out) + "\n"
}

var kubeletTmpl = template.Must(template.New("kubelet").Parse(`# kubox dev: kubelet configuration (generated)
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://{{.L.ContainerdSocket}}
cgroupDriver: cgroupfs
# own subtree: two kubelets sharing a cgroup root kill each other's pods (orphan cgroup cleanup)
cgroupRoot: {{.C.CgroupRoot}}
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
{{- if .H.CgroupV1}}
# this host is on cgroup v1; the kubelet refuses v1 unless told otherwise
failCgroupV1: false
{{- end}}
failSwapOn: false
address: {{.C.NodeIP}}
port: {{.C.Ports.Kubelet}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.C.Ports.KubeletHealthz}}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: {{.L.PKI}}/ca.crt}
authorization:
  mode: Webhook
tlsCertFile: {{.L.PKI}}/kubelet.crt
tlsPrivateKeyFile: {{.L.PKI}}/kubelet.key
podLogsDir: {{.L.PodLogs}}
serializeImagePulls: false
# images are imported locally and cannot be pulled again: never garbage-collect them
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "200Mi"
  nodefs.available: "2%"
  imagefs.available: "2%"
maxPods: 110
# pods get no host DNS: there is no cluster DNS and pod traffic stays on the bridge
resolvConf: ""
syncFrequency: 10s
nodeStatusReportFrequency: 10s
`))

// RenderKubelet renders the KubeletConfiguration file.
func RenderKubelet(c Config, l Layout, h Host) string {
	return execute(kubeletTmpl, map[string]any{"C": c, "L": l, "H": h})
}

var kubeconfigTmpl = template.Must(template.New("kubeconfig").Parse(`apiVersion: v1
kind: Config
clusters:
- name: kubox-dev
  cluster:
    server: {{.Server}}
    certificate-authority-data: {{.CA}}
    extensions:
    - name: {{.RouterExtension}}
      extension:
        url: {{.Router}}
users:
- name: kubox-admin
  user:
    client-certificate-data: {{.Cert}}
    client-key-data: {{.Key}}
    token: {{.Token}}
contexts:
- name: kubox-dev
  context: {cluster: kubox-dev, user: kubox-admin, namespace: default}
current-context: kubox-dev
`))

// RenderKubeconfig renders an admin kubeconfig: a client certificate in system:masters for the
// API server, the same identity's bearer token (the static token file, RenderTokenAuthFile) for
// kubox-router, which authenticates callers with TokenReview, and the router's URL.
func RenderKubeconfig(c Config, caPEM, certPEM, keyPEM []byte, token string) string {
	b64 := base64.StdEncoding.EncodeToString
	return execute(kubeconfigTmpl, map[string]string{
		"Server": fmt.Sprintf("https://127.0.0.1:%d", c.Ports.APIServer),
		"CA":     b64(caPEM), "Cert": b64(certPEM), "Key": b64(keyPEM), "Token": token,
		"RouterExtension": contract.RouterKubeconfigExtension, "Router": c.RouterURL(),
	})
}

// AdminUser is the identity of the admin token: the admin certificate's user, in system:masters.
const AdminUser = "kubox-admin"

// RenderTokenAuthFile is the API server's --token-auth-file: the admin token, user, uid, groups.
func RenderTokenAuthFile(token string) string {
	return fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", token, AdminUser, AdminUser)
}

func execute(t *template.Template, data any) string {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		panic(fmt.Sprintf("template %s: %v", t.Name(), err)) // templates are static and tested
	}
	return b.String()
}

// RenderControllerConfig is kubox-controller's configuration: the defaults, plus the agent image
// built locally (never pulled), the agent token key, and kubox-egress on the node
// (EgressComponent) for sandboxes with spec.egress.
func RenderControllerConfig(c Config, l Layout) string {
	return fmt.Sprintf(`apiVersion: config.kubox.dev/v1alpha1
kind: ControllerConfiguration
agent:
  image: %s
  imagePullPolicy: Never
  tokenKeyFile: %s
%s%s`, AgentImage, l.AgentTokenKey, renderEgressProxy(c), renderMemory(c, l.NodeToken))
}

// renderMemory is the part of the controller's configuration that reaches kubox-node: at
// NodeAPIURL on this one node (both modes: the in-cluster controller uses the host network), with
// the node token in tokenFile.
func renderMemory(c Config, tokenFile string) string {
	return fmt.Sprintf(`controllers:
  sandbox:
    memory:
      nodeAPIURL: %s
      tokenFile: %s
`, c.NodeAPIURL(), tokenFile)
}

// renderEgressProxy is the networkPolicy part of the controller's configuration: kubox-egress
// at EgressProxyURL, reached through an ipBlock of the node IP (the local node's kubox-egress is
// a host process, which no podSelector selects).
func renderEgressProxy(c Config) string {
	return fmt.Sprintf(`networkPolicy:
  egressProxy:
    url: %s
    cidrs: [%s/32]
`, c.EgressProxyURL(), c.NodeIP())
}
