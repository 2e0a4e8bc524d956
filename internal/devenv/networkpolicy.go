package devenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// NetworkPolicies is the node's NetworkPolicy implementation: kube-network-policies (SIG
// Network's, sigs.k8s.io/kube-network-policies), built patched by hack/tools/install.sh and run as
// a host process next to the bridge CNI, which ignores NetworkPolicy. It programs an nftables
// table (inet kube-network-policies) that sends the first packet of every new connection to or
// from a Pod that a policy selects to a netfilter queue, and judges it in user space against the
// policies it watches. Traffic from the node itself (the kubelet, the host-network kubox-router)
// counts as the Pod's local node, which the NetworkPolicy API always admits.
const NetworkPolicies = "kube-network-policies"

// NetworkPolicyQueue is the netfilter queue kube-network-policies reads: not its default (100),
// so another kube-network-policies on the same host keeps its own.
const NetworkPolicyQueue = 177

// networkPoliciesArgs runs kube-network-policies with the admin kubeconfig (the patched
// --kubeconfig flag), for this node's Pods only. NRI stays off as in containerd's config: Pod IPs
// come from the API server, so a Pod is policed once the kubelet has reported its IP.
func networkPoliciesArgs(c Config, l Layout, t Tools) []string {
	return []string{t.NetworkPolicies, "--kubeconfig=" + l.Kubeconfig, "--hostname-override=" + c.NodeName,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", c.Ports.NetworkPolicyMetrics),
		fmt.Sprintf("--nfqueue-id=%d", NetworkPolicyQueue), "--disable-nri", "--v=2"}
}

// networkPoliciesReady reports whether kube-network-policies listens on its netfilter queue,
// which it opens only after its caches synced and it wrote its nftables rules.
func networkPoliciesReady(context.Context) (bool, error) {
	data, err := os.ReadFile("/proc/net/netfilter/nfnetlink_queue")
	if err != nil {
		return false, fmt.Errorf("netfilter queues unavailable (CONFIG_NETFILTER_NETLINK_QUEUE): %w", err)
	}
	if QueueBound(string(data), NetworkPolicyQueue) {
		return true, nil
	}
	return false, fmt.Errorf("nothing listens on netfilter queue %d yet", NetworkPolicyQueue)
}

// QueueBound reports whether /proc/net/netfilter/nfnetlink_queue (one line per bound queue, the
// queue number first) lists queue.
func QueueBound(procQueues string, queue int) bool {
	for line := range strings.Lines(procQueues) {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == strconv.Itoa(queue) {
			return true
		}
	}
	return false
}

// bridgeNetfilter makes traffic between two Pods on the bridge, which the bridge forwards without
// routing it, pass the IPv4 netfilter hooks where kube-network-policies judges it. With it off,
// sandboxes on this node would reach each other whatever the policy.
const bridgeNetfilter = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// EnsureBridgeNetfilter loads br_netfilter when its sysctl is missing and turns the sysctl on. It
// reports whether it changed the host.
func EnsureBridgeNetfilter() (changed bool, err error) {
	if _, err := os.Stat(bridgeNetfilter); err != nil {
		if out, err := exec.Command("modprobe", "br_netfilter").CombinedOutput(); err != nil {
			return false, fmt.Errorf("NetworkPolicy between Pods needs br_netfilter: modprobe br_netfilter: %v: %s",
				err, strings.TrimSpace(string(out)))
		}
		changed = true
	}
	data, err := os.ReadFile(bridgeNetfilter)
	if err != nil {
		return changed, err
	}
	if strings.TrimSpace(string(data)) == "1" {
		return changed, nil
	}
	if err := os.WriteFile(bridgeNetfilter, []byte("1\n"), 0o644); err != nil {
		return changed, fmt.Errorf("turn on %s (Pod-to-Pod traffic would bypass NetworkPolicy): %w", bridgeNetfilter, err)
	}
	return true, nil
}
