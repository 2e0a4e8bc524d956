package sandboxtemplate

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// egressThroughProxy is the egress of a template with spec.egress: cluster DNS (so the sandbox
// can resolve the proxy's Service) and kubox-egress's proxy port, and nothing else, so a program
// that ignores HTTP_PROXY gets a refused connection rather than a way around the proxy. The
// proxy resolves destination names itself; the sandbox's own DNS answers decide nothing. extra
// are the template's own egress rules (networkPolicy.egress), for in-cluster services it names
// explicitly; the secure default's public-internet rule is never added.
func egressThroughProxy(settings configv1alpha1.NetworkPolicySettings, extra []networkingv1.NetworkPolicyEgressRule) []networkingv1.NetworkPolicyEgressRule {
	tcp := corev1.ProtocolTCP
	// Validate checked the URL when the configuration was loaded.
	p, _ := settings.EgressProxy.ProxyPort()
	port := intstr.FromInt32(p)
	rules := []networkingv1.NetworkPolicyEgressRule{
		secureDefaultEgress(settings.ClusterDNS)[0],
		{To: egressProxyPeers(settings.EgressProxy), Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}},
	}
	return append(rules, extra...)
}

// egressProxyPeers are kubox-egress's addresses when the settings name them, else its Pods.
func egressProxyPeers(s configv1alpha1.EgressProxySettings) []networkingv1.NetworkPolicyPeer {
	if len(s.CIDRs) == 0 {
		return []networkingv1.NetworkPolicyPeer{podsIn(s.PeerSelector)}
	}
	peers := make([]networkingv1.NetworkPolicyPeer, len(s.CIDRs))
	for i, c := range s.CIDRs {
		peers[i] = networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}}
	}
	return peers
}
