package devenv

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

// Config is what a person may choose about the local environment. Everything else is derived.
type Config struct {
	// StateDir holds every file the environment writes: PKI, configs, data, logs and pidfiles.
	StateDir string
	// RepoDir is the kubox checkout: hack/tools, config/crd and cmd/kubox-controller come from it.
	RepoDir string
	// ImagesDir caches the locally built image tarballs, keyed by their inputs.
	ImagesDir string
	// NodeName is the name the kubelet registers.
	NodeName string
	// Bridge is the CNI bridge; its first address is the gateway and the node IP.
	Bridge string
	// PodSubnet is the bridge's subnet (host-local IPAM); pods get addresses from it.
	PodSubnet netip.Prefix
	// ServiceSubnet is the ClusterIP range. Nothing routes it: there is no kube-proxy.
	ServiceSubnet netip.Prefix
	// CgroupRoot is the kubelet's own cgroup subtree, never shared with another kubelet.
	CgroupRoot string
	// Ports are the TCP ports the environment listens on, all on 127.0.0.1 except the kubelet's.
	Ports Ports
	// InCluster runs kubox-controller and kubox-router as Deployments installed from config/dev
	// instead of host processes (`kubox dev up --in-cluster`; see kuboxModeOf).
	InCluster bool
	// StockShim starts containerd's handler runsc with gVisor's own shim from the same pinned
	// module (hack/tools/install.sh gvisor-stock-shim) instead of kubox's patched one: a node as
	// a cluster has it before kubox-node installs the patched shim (`kubox dev up --stock-shim`).
	StockShim bool
}

// Ports lists every TCP port the environment binds.
type Ports struct {
	APIServer         int
	EtcdClient        int
	EtcdPeer          int
	ControllerManager int
	Scheduler         int
	Kubelet           int
	KubeletHealthz    int
	// ControllerMetrics and ControllerHealth are kubox-controller's metrics and probe ports.
	ControllerMetrics int
	ControllerHealth  int
	// RouterHTTP is kubox-router's listener (clients reach sandboxes there); RouterMetrics and
	// RouterHealth its metrics and probe ports.
	RouterHTTP    int
	RouterMetrics int
	RouterHealth  int
	// NetworkPolicyMetrics is kube-network-policies' metrics port.
	NetworkPolicyMetrics int
	// EgressProxy is kubox-egress's proxy, on the node IP (EgressProxyURL); EgressMetrics and
	// EgressHealth its metrics and probe ports on 127.0.0.1.
	EgressProxy   int
	EgressMetrics int
	EgressHealth  int
	// NodeAPI is kubox-node's snapshot API (NodeAPIURL), which answers /healthz too.
	NodeAPI int
}

// DefaultConfig returns ports and names chosen not to collide with envtest (random ports), the
// usual Kubernetes ports, or the studies' clusters on the same machine.
func DefaultConfig() Config {
	return Config{
		StateDir:      DefaultStateDir(),
		ImagesDir:     filepath.Join(cacheHome(), "kubox", "images"),
		NodeName:      "kubox-node",
		Bridge:        "kuboxbr0",
		PodSubnet:     netip.MustParsePrefix("10.77.0.0/24"),
		ServiceSubnet: netip.MustParsePrefix("10.78.0.0/24"),
		CgroupRoot:    "/kubox",
		Ports: Ports{
			APIServer: 16443, EtcdClient: 12379, EtcdPeer: 12380,
			ControllerManager: 16257, Scheduler: 16259,
			Kubelet: 11250, KubeletHealthz: 11248,
			ControllerMetrics: 16080, ControllerHealth: 16081,
			RouterHTTP: 16090, RouterMetrics: 16091, RouterHealth: 16092,
			NetworkPolicyMetrics: 16093,
			EgressProxy:          16094, EgressMetrics: 16095, EgressHealth: 16096,
			NodeAPI: 16097,
		},
	}
}

// DefaultStateDir is /var/lib/kubox-dev for root and ~/.local/state/kubox/dev otherwise.
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/kubox-dev"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "kubox", "dev")
}

func cacheHome() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache")
}

// PreviewDomain is kubox-router's preview domain on the local environment: port P of a sandbox
// is http://P-<status.previewID>.localhost:<RouterHTTP>/, and names under localhost resolve to
// 127.0.0.1 in curl and browsers.
const PreviewDomain = "localhost"

// E2BDomain is kubox-router's E2B domain on the local environment (docs/e2b.md): E2B's control
// API on api.e2b.localhost and envd on 49983-<sandboxID>.e2b.localhost, on the router's port.
// Names under localhost resolve to 127.0.0.1; E2B's SDKs need TLS in front (test/e2e/e2b_test.go).
const E2BDomain = "e2b.localhost"

// RouterURL is where kubox-router serves clients.
func (c Config) RouterURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.Ports.RouterHTTP) }

// EgressProxyURL is where sandboxes with spec.egress reach kubox-egress: a process on the node,
// listening on the node IP, the one address of the host the Pods' NetworkPolicy lets them reach.
// There is no cluster DNS or kube-proxy to give them the kubox-egress Service.
func (c Config) EgressProxyURL() string {
	return fmt.Sprintf("http://%s:%d", c.NodeIP(), c.Ports.EgressProxy)
}

// NodeIP is the bridge gateway address. The kubelet serves on it, so the API server reaches the
// kubelet (exec, logs) on an address of the bridge kubox creates, never on a host interface.
func (c Config) NodeIP() netip.Addr { return c.PodSubnet.Addr().Next() }

// KubernetesServiceIP is the first ClusterIP, the `kubernetes` Service (in the serving cert).
func (c Config) KubernetesServiceIP() netip.Addr { return c.ServiceSubnet.Addr().Next() }

// Layout is where every file of the environment lives, all below Config.StateDir.
type Layout struct {
	Root, PKI, Etc, Logs, Pids, Bin   string
	EtcdData, KubeletRoot, PodLogs    string
	ContainerdRoot, ContainerdState   string
	ContainerdSocket, RunscRoot       string
	CNIConfDir, CNIIPAMDir, RunscLogs string
	Kubeconfig                        string
	// ControllerConfig is kubox-controller's --config file; AgentTokenKey the key it derives
	// sandboxes' agent tokens from (the router reads it too).
	ControllerConfig, AgentTokenKey string
	// AdminToken is the bearer token of the kubeconfig's admin user, and TokenAuthFile the API
	// server's static token file that holds it: kubox-router authenticates callers by bearer token
	// (TokenReview), which a client certificate alone cannot give it.
	AdminToken, TokenAuthFile string
	// EgressHosts is kubox-egress's --hosts-file: names written there resolve, for sandboxes'
	// egress, to the addresses beside them (local test servers), before DNS is asked.
	EgressHosts string
	// Snapshots holds gVisor checkpoint images, one folder per namespace: the gVisor shim restores
	// a Pod annotated kubox.dev/restore-image only from an image below Snapshots/<its namespace>.
	Snapshots string
	// SnapshotStore is kubox-node's --snapshot-store: a copy of every snapshot, from which a
	// snapshot lost from Snapshots is fetched back (a cluster mounts a shared volume there).
	SnapshotStore string
	// NodeToken is the token kubox-node's callers present.
	NodeToken string
	// ManifestKey is the file, root only, where kubox-node writes the key it signs snapshot
	// manifests with and the gVisor shim reads it (runsc.toml's kubox_manifest_key).
	ManifestKey string
}

// NewLayout derives every path from the state directory.
func NewLayout(stateDir string) Layout {
	j := func(p ...string) string { return filepath.Join(append([]string{stateDir}, p...)...) }
	return Layout{
		Root: stateDir, PKI: j("pki"), Etc: j("etc"), Logs: j("logs"), Pids: j("pids"), Bin: j("bin"),
		EtcdData: j("etcd"), KubeletRoot: j("kubelet"), PodLogs: j("pod-logs"),
		ContainerdRoot: j("containerd", "root"), ContainerdState: j("containerd", "state"),
		ContainerdSocket: j("containerd", "containerd.sock"), RunscRoot: j("containerd", "runsc"),
		CNIConfDir: j("cni", "net.d"), CNIIPAMDir: j("cni", "ipam"), RunscLogs: j("logs", "runsc") + "/",
		Kubeconfig:       j("kubeconfig"),
		ControllerConfig: j("etc", "kubox-controller.yaml"), AgentTokenKey: j("etc", "agent-token-key"),
		AdminToken: j("etc", "admin-token"), TokenAuthFile: j("etc", "tokens.csv"),
		EgressHosts: j("etc", "egress-hosts"), Snapshots: j("snapshots"), SnapshotStore: j("snapshot-store"),
		NodeToken: j("etc", "node-token"), ManifestKey: j("manifest-key", "manifest.key"),
	}
}

// PidFile and LogFile name a component's pidfile and log.
func (l Layout) PidFile(name string) string { return filepath.Join(l.Pids, name+".pid") }

// UpMarker exists once `up` finished every step; an interrupted `up` leaves none, so the next
// one starts over instead of calling a half-configured cluster healthy.
func (l Layout) UpMarker() string { return filepath.Join(l.Root, "up-complete") }

// InClusterMarker exists when `up --in-cluster` installed kubox-controller and kubox-router as
// Deployments; `status`, `down` and the next `up` read it.
func (l Layout) InClusterMarker() string { return filepath.Join(l.Root, "in-cluster") }

// LogFile is the component's combined stdout and stderr.
func (l Layout) LogFile(name string) string { return filepath.Join(l.Logs, name+".log") }
