package sandboxtemplate

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
)

// The secure default is the NetworkPolicy of a Managed template without spec.networkPolicy. It
// treats the sandbox as untrusted code: nothing but the router may connect to it, and it may
// reach the cluster's DNS servers and the public internet, but no address inside the cluster,
// the node's network or the cloud provider's control plane.

// namespaceNameLabel is the label the API server sets on every namespace to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// dnsPort is the port cluster DNS servers answer on, over UDP and TCP (TCP for large answers).
const dnsPort = 53

// publicIPv4 and publicIPv6 are the public internet: everything except contract.BlockedRanges,
// the list kubox-egress refuses too (private, loopback, link-local and metadata, CGNAT,
// reserved and multicast ranges, and the IPv6 prefixes that carry an IPv4 address). A cluster's
// own Pod and Service addresses are almost always in one of them; a cluster that uses public
// addresses for its Pods or Services must write its own rules.
var publicIPv4, publicIPv6 = publicInternet()

// publicInternet is 0.0.0.0/0 and ::/0, each except the blocked ranges of its family.
func publicInternet() (v4, v6 networkingv1.IPBlock) {
	v4, v6 = networkingv1.IPBlock{CIDR: "0.0.0.0/0"}, networkingv1.IPBlock{CIDR: "::/0"}
	for _, p := range contract.BlockedRanges() {
		if p.Addr().Is4() {
			v4.Except = append(v4.Except, p.String())
		} else {
			v6.Except = append(v6.Except, p.String())
		}
	}
	return v4, v6
}

// secureDefaultIngress admits connections from the router's pods only, on any port: the router
// forwards each request to the port the client asked for.
func secureDefaultIngress(router configv1alpha1.PeerSelector) []networkingv1.NetworkPolicyIngressRule {
	return []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{podsIn(router)}}}
}

// secureDefaultEgress allows DNS queries to the cluster's DNS servers, so the sandbox's DNS keeps
// working and stays inside the cluster (agent-sandbox blocks cluster DNS and points the pod at
// public resolvers instead), and connections to public addresses on any port. The rules share
// nothing with the package's variables.
func secureDefaultEgress(clusterDNS configv1alpha1.PeerSelector) []networkingv1.NetworkPolicyEgressRule {
	dnsPorts := []networkingv1.NetworkPolicyPort{}
	for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
		port := intstr.FromInt32(dnsPort)
		dnsPorts = append(dnsPorts, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
	}
	return []networkingv1.NetworkPolicyEgressRule{
		{To: []networkingv1.NetworkPolicyPeer{podsIn(clusterDNS)}, Ports: dnsPorts},
		{To: []networkingv1.NetworkPolicyPeer{{IPBlock: publicIPv4.DeepCopy()}, {IPBlock: publicIPv6.DeepCopy()}}},
	}
}

// podsIn is a peer selecting the pods labelled p.PodLabels in namespace p.Namespace. Its maps are
// copies, so a policy built from it can be changed without changing p.
func podsIn(p configv1alpha1.PeerSelector) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: p.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(p.PodLabels)},
	}
}
