package devenv

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Tools are the absolute paths of the binaries the environment runs.
type Tools struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kubectl, Kubelet string
	Containerd, ShimRunc, Ctr, Runsc, ShimRunsc                     string
	// NetworkPolicies is kube-network-policies (see NetworkPolicies).
	NetworkPolicies string
	// Runc and CNIBinDir come from Debian packages (runc, containernetworking-plugins).
	Runc, CNIBinDir string
}

// ToolDirs are the cache folders printed by `hack/tools/install.sh dir <tool>`.
type ToolDirs struct{ Etcd, Kubernetes, Containerd, GVisor, NetworkPolicies string }

// NewTools names every binary inside the tool cache folders.
func NewTools(d ToolDirs) Tools {
	k := func(n string) string { return filepath.Join(d.Kubernetes, n) }
	c := func(n string) string { return filepath.Join(d.Containerd, n) }
	return Tools{
		Etcd: filepath.Join(d.Etcd, "etcd"), APIServer: k("kube-apiserver"),
		ControllerManager: k("kube-controller-manager"), Scheduler: k("kube-scheduler"),
		Kubectl: k("kubectl"), Kubelet: k("kubelet"),
		Containerd: c("containerd"), ShimRunc: c("containerd-shim-runc-v2"), Ctr: c("ctr"),
		Runsc: filepath.Join(d.GVisor, "runsc"), ShimRunsc: filepath.Join(d.GVisor, "containerd-shim-runsc-v1"),
		Runc: "/usr/sbin/runc", CNIBinDir: "/usr/lib/cni",
		// built with hack/tools/kube-network-policies/patches applied
		NetworkPolicies: filepath.Join(d.NetworkPolicies, NetworkPolicies),
	}
}

// Component is one long-running process of the environment.
type Component struct {
	Name string
	Argv []string
}

// Component names, in start order.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Containerd        = "containerd"
	Kubelet           = "kubelet"
	Controller        = "kubox-controller"
	Router            = "kubox-router"
	Egress            = "kubox-egress"
	// NodeAPI is kubox-node, the snapshot API of the node (not the node itself, which is the
	// kubelet and Config.NodeName).
	NodeAPI = "kubox-node"
)

// StartOrder lists every component in the order `up` starts them. kube-network-policies starts
// before the kubelet, so no Pod runs before NetworkPolicy is enforced.
var StartOrder = []string{Etcd, APIServer, ControllerManager, Scheduler, Containerd, NetworkPolicies, Kubelet, Egress, NodeAPI, Controller, Router}

// Plan returns the command line of every component except kubox-controller, whose binary is
// built from the checkout (see ControllerComponent).
func Plan(c Config, l Layout, t Tools) map[string]Component {
	return map[string]Component{
		Etcd:              {Etcd, etcdArgs(c, l, t)},
		APIServer:         {APIServer, apiserverArgs(c, l, t)},
		ControllerManager: {ControllerManager, controllerManagerArgs(c, l, t)},
		Scheduler:         {Scheduler, schedulerArgs(c, l, t)},
		Containerd:        {Containerd, []string{t.Containerd, "--config", filepath.Join(l.Etc, "containerd.toml")}},
		NetworkPolicies:   {NetworkPolicies, networkPoliciesArgs(c, l, t)},
		Kubelet:           {Kubelet, kubeletArgs(c, l, t)},
	}
}

// ControllerComponent runs the kubox controller against the environment: its configuration
// file (RenderControllerConfig), metrics and probes on 127.0.0.1, and leader election with its
// Lease in kube-system (out of a cluster the controller cannot tell its own namespace).
func ControllerComponent(bin string, c Config, l Layout) Component {
	return Component{Controller, []string{bin, "--kubeconfig=" + l.Kubeconfig, "--config=" + l.ControllerConfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", c.Ports.ControllerMetrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", c.Ports.ControllerHealth),
		"--leader-election-namespace=kube-system"}}
}

// RouterComponent runs kubox-router against the environment: clients on RouterURL, metrics and
// probes on 127.0.0.1, the agent token key it shares with the controller. It dials sandboxes by
// their pod IPs on the environment's bridge.
func RouterComponent(bin string, c Config, l Layout) Component {
	return Component{Router, []string{bin, "--kubeconfig=" + l.Kubeconfig,
		fmt.Sprintf("--http-bind-address=127.0.0.1:%d", c.Ports.RouterHTTP),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", c.Ports.RouterMetrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", c.Ports.RouterHealth),
		"--agent-token-key-file=" + l.AgentTokenKey, "--preview-domain=" + PreviewDomain, "--e2b-domain=" + E2BDomain}}
}

// EgressComponent runs kubox-egress on the node, in either kubox mode: its proxy on
// EgressProxyURL, metrics and probes on 127.0.0.1, names from Layout.EgressHosts first, and the
// environment's egress test CA trusted for credential domains' servers besides the system's.
func EgressComponent(bin string, c Config, l Layout) Component {
	return Component{Egress, []string{bin, "--kubeconfig=" + l.Kubeconfig,
		fmt.Sprintf("--proxy-bind-address=%s:%d", c.NodeIP(), c.Ports.EgressProxy),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", c.Ports.EgressMetrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", c.Ports.EgressHealth),
		"--hosts-file=" + l.EgressHosts, "--upstream-ca-file=" + filepath.Join(l.PKI, EgressTestCA+".crt")}}
}

// NodeAPIComponent runs kubox-node on the node: its snapshot API on 127.0.0.1 (kubox-controller
// and the tests run on this host), the node token in Layout.NodeToken, the snapshots in
// Layout.Snapshots (the gVisor shim's kubox_snapshot_root) with a copy of each in
// Layout.SnapshotStore, the key it signs them with in Layout.ManifestKey (one node: no Secret),
// and the node's containerd, shim and kubelet folders.
func NodeAPIComponent(bin string, c Config, l Layout, t Tools) Component {
	return Component{NodeAPI, []string{bin,
		fmt.Sprintf("--api-bind-address=127.0.0.1:%d", c.Ports.NodeAPI),
		"--token-file=" + l.NodeToken, "--snapshot-root=" + l.Snapshots, "--snapshot-store=" + l.SnapshotStore, "--runsc=" + t.Runsc,
		"--runsc-root=" + l.RunscRoot, "--containerd-root=" + l.ContainerdRoot, "--containerd-state=" + l.ContainerdState,
		"--kubelet-root=" + l.KubeletRoot, "--manifest-key-file=" + l.ManifestKey}}
}

// NodeAPIURL is kubox-node's snapshot API on the local node (TLS only: package nodetls).
func (c Config) NodeAPIURL() string { return fmt.Sprintf("https://127.0.0.1:%d", c.Ports.NodeAPI) }

func etcdArgs(c Config, l Layout, t Tools) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdPeer)
	return []string{t.Etcd, "--name=kubox", "--data-dir=" + l.EtcdData,
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=kubox=" + peer, "--unsafe-no-fsync", "--log-level=warn"}
}

func apiserverArgs(c Config, l Layout, t Tools) []string {
	p := func(n string) string { return filepath.Join(l.PKI, n) }
	return []string{t.APIServer,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", c.Ports.EtcdClient),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.Ports.APIServer),
		// 127.0.0.1 may not back the `kubernetes` Service endpoints (1.37 refuses loopback).
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"), "--token-auth-file=" + l.TokenAuthFile,
		"--kubelet-client-certificate=" + p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + p("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
		"--authorization-mode=Node,RBAC",
		fmt.Sprintf("--service-account-issuer=https://127.0.0.1:%d", c.Ports.APIServer),
		"--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=" + c.ServiceSubnet.String(), "--allow-privileged=true"}
}

// disabledControllers are kube-controller-manager controllers a one-node dev cluster does not need.
var disabledControllers = []string{
	"certificatesigningrequest-signing-controller", "certificatesigningrequest-approving-controller",
	"persistentvolume-attach-detach-controller", "horizontal-pod-autoscaler-controller",
}

func controllerManagerArgs(c Config, l Layout, t Tools) []string {
	ctrls := "*,-" + strings.Join(disabledControllers, ",-")
	return []string{t.ControllerManager, "--kubeconfig=" + l.Kubeconfig,
		"--authentication-kubeconfig=" + l.Kubeconfig, "--authorization-kubeconfig=" + l.Kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.Ports.ControllerManager),
		"--service-account-private-key-file=" + filepath.Join(l.PKI, "sa.key"),
		"--root-ca-file=" + filepath.Join(l.PKI, "ca.crt"),
		"--use-service-account-credentials=false", "--leader-elect=false",
		// dynamic provisioning for the default StorageClass (provisioner kubernetes.io/host-path)
		"--enable-hostpath-provisioner",
		"--controllers=" + ctrls}
}

func schedulerArgs(c Config, l Layout, t Tools) []string {
	return []string{t.Scheduler, "--kubeconfig=" + l.Kubeconfig,
		"--authentication-kubeconfig=" + l.Kubeconfig, "--authorization-kubeconfig=" + l.Kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.Ports.Scheduler), "--leader-elect=false"}
}

func kubeletArgs(c Config, l Layout, t Tools) []string {
	return []string{t.Kubelet, "--config=" + filepath.Join(l.Etc, "kubelet.yaml"),
		"--kubeconfig=" + l.Kubeconfig, "--hostname-override=" + c.NodeName,
		"--node-ip=" + c.NodeIP().String(), "--root-dir=" + l.KubeletRoot,
		"--cert-dir=" + filepath.Join(l.KubeletRoot, "pki"), "--v=2"}
}
