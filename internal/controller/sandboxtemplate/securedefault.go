package sandboxtemplate

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// The secure default is the NetworkPolicy of a Managed template without spec.networkPolicy. It
// treats the sandbox as untrusted code: nothing but the router may connect to it, and it may
// reach the cluster's DNS servers and the public internet, but no address inside the cluster,
// the node's network or the cloud provider's control plane.

// namespaceNameLabel is the label the API server sets on every namespace to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// dnsPort is the port cluster DNS servers answer on, over UDP and TCP (TCP for large answers).
const dnsPort = 53

// publicIPv4 is the public IPv4 internet: everything except the ranges below. A cluster's own
// Pod and Service addresses are almost always in one of them; a cluster that uses public
// addresses for its Pods or Services must write its own rules.
var publicIPv4 = networkingv1.IPBlock{
	CIDR: "0.0.0.0/0",
	Except: []string{
		// Private networks (RFC 1918): Pod, Service and node addresses of nearly every cluster,
		// and the cloud VPC around it.
		"10.0.0.0/8",
		"172.16.0.0/12",
		"192.168.0.0/16",
		// Shared address space for carrier-grade NAT (RFC 6598). Used by some clusters for Pods
		// or Services and by overlay VPNs; Alibaba Cloud's metadata service is 100.100.100.200.
		"100.64.0.0/10",
		// Link-local (RFC 3927): the instance metadata service of AWS, GCP, Azure, OpenStack,
		// Oracle, DigitalOcean and others at 169.254.169.254 (credentials for the node's
		// identity), AWS's time and ECS endpoints, Tencent Cloud's 169.254.0.23, and
		// node-local DNS caches.
		"169.254.0.0/16",
		// Loopback (RFC 1122): never a destination outside the pod.
		"127.0.0.0/8",
		// Azure's platform address (WireServer): it serves VM extension settings and the
		// host's DHCP and DNS to the node, and nothing a sandbox needs.
		"168.63.129.16/32",
	},
}

// publicIPv6 is the public IPv6 internet: everything except the ranges below.
var publicIPv6 = networkingv1.IPBlock{
	CIDR: "::/0",
	Except: []string{
		// Unique local addresses (RFC 4193): private IPv6 Pod, Service and VPC networks, and
		// AWS's IPv6 instance metadata endpoint fd00:ec2::254.
		"fc00::/7",
		// Link-local (RFC 4291).
		"fe80::/10",
		// Loopback.
		"::1/128",
	},
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
