package devenv

import (
	"slices"
	"testing"
)

func TestQueueBound(t *testing.T) {
	// /proc/net/netfilter/nfnetlink_queue: queue, peer port id, queued, copy mode, copy range,
	// dropped, user dropped, last packet id, 1
	procQueues := "  100  41234     0 2   128     0     0        7  1\n  177  51234     0 2   128     0     0       42  1\n"
	for queue, want := range map[int]bool{177: true, 100: true, 17: false, 1234: false} {
		if got := QueueBound(procQueues, queue); got != want {
			t.Errorf("QueueBound(queue %d) = %t, want %t", queue, got, want)
		}
	}
	if QueueBound("", NetworkPolicyQueue) {
		t.Error("QueueBound on no queues = true")
	}
}

// The policy daemon must be enforcing before the kubelet can start a Pod: a Pod that starts
// first has a window with no policy at all.
func TestNetworkPoliciesStartBeforeTheKubelet(t *testing.T) {
	np, kubelet := slices.Index(StartOrder, NetworkPolicies), slices.Index(StartOrder, Kubelet)
	if np < 0 || np > kubelet {
		t.Errorf("StartOrder %v starts %s at %d, the kubelet at %d: it must come first", StartOrder, NetworkPolicies, np, kubelet)
	}
	if _, ok := DefaultConfig().Ports.PortList()["kube-network-policies metrics"]; !ok {
		t.Error("preflight does not check kube-network-policies' metrics port")
	}
}
