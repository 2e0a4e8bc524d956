package contract

import "net/netip"

// blockedRanges are the addresses no sandbox reaches unless its operator names them: the
// cluster's and the node's own networks, the cloud provider's control plane, and every encoding
// of an IPv4 address inside IPv6 that a translator or tunnel turns back into one. kubox-egress
// refuses them (a name resolving into one, or an IP literal in one) unless a policy's allowCIDRs
// names a range inside them, and the secure default NetworkPolicy of a Managed template excepts
// them from the public internet it allows. One list, so the two never drift.
var blockedRanges = []string{
	// "This network" (RFC 791): 0.0.0.0 reaches the local host on Linux.
	"0.0.0.0/8",
	// Private networks (RFC 1918): Pod, Service and node addresses of nearly every cluster, and
	// the cloud VPC around it.
	"10.0.0.0/8",
	"172.16.0.0/12",
	"192.168.0.0/16",
	// Shared address space for carrier-grade NAT (RFC 6598). Used by some clusters for Pods or
	// Services and by overlay VPNs; Alibaba Cloud's metadata service is 100.100.100.200.
	"100.64.0.0/10",
	// Loopback (RFC 1122): never a destination outside the pod.
	"127.0.0.0/8",
	// Link-local (RFC 3927): the instance metadata service of AWS, GCP, Azure, OpenStack, Oracle,
	// DigitalOcean and others at 169.254.169.254 (credentials for the node's identity), AWS's
	// time and ECS endpoints, Tencent Cloud's 169.254.0.23, and node-local DNS caches.
	"169.254.0.0/16",
	// Azure's platform address (WireServer): it serves VM extension settings and the host's DHCP
	// and DNS to the node, and nothing a sandbox needs.
	"168.63.129.16/32",
	// IETF protocol assignments (RFC 6890): DS-Lite and NAT64 discovery addresses
	// (192.0.0.170/31) among them; nothing on the public internet.
	"192.0.0.0/24",
	// Benchmarking (RFC 2544): not routed on the internet, used inside networks (lab and cloud
	// internal endpoints, proxies' fake-IP pools).
	"198.18.0.0/15",
	// Multicast (RFC 5771).
	"224.0.0.0/4",
	// Reserved "class E" (RFC 1112), with the limited broadcast 255.255.255.255: not routed on
	// the internet; some clusters use it for Pods.
	"240.0.0.0/4",
	// The unspecified (::) and loopback (::1) addresses and the deprecated IPv4-compatible
	// addresses (::a.b.c.d, RFC 4291), which an automatic tunnel sends to the IPv4 address.
	"::/96",
	// NAT64's well-known prefix (RFC 6052) and its local-use prefix (RFC 8215): a translator
	// connects to the IPv4 address inside, internal ones included.
	"64:ff9b::/96",
	"64:ff9b:1::/48",
	// Teredo (RFC 4380) and 6to4 (RFC 3056, deprecated by RFC 7526): each carries an IPv4
	// address that a relay delivers to.
	"2001::/32",
	"2002::/16",
	// Unique local addresses (RFC 4193): private IPv6 Pod, Service and VPC networks, and AWS's
	// IPv6 instance metadata endpoint fd00:ec2::254.
	"fc00::/7",
	// Link-local (RFC 4291), and the deprecated site-local (RFC 3879) that old networks still
	// route internally.
	"fe80::/10",
	"fec0::/10",
	// Multicast (RFC 4291).
	"ff00::/8",
}

// IPv4-mapped addresses (::ffff:a.b.c.d) are in no list: they are the IPv4 address itself.
// kubox-egress unmaps every address before it looks at one, and a Pod's socket sends a mapped
// destination as an IPv4 packet, which the NetworkPolicy's IPv4 exceptions match.

// BlockedRanges returns the blocked ranges (see blockedRanges), IPv4 first: a new slice on every
// call, so no caller can change another's.
func BlockedRanges() []netip.Prefix {
	out := make([]netip.Prefix, len(blockedRanges))
	for i, s := range blockedRanges {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}
