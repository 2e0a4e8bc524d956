package contract

import (
	"net/netip"
	"testing"
)

// TestBlockedRanges: each range is written in its canonical form (a NetworkPolicy's except and
// the proxy's prefix are the same text), IPv4 before IPv6 (the policy's two ipBlocks), and
// the list holds the addresses a sandbox must never reach, in every encoding of them.
func TestBlockedRanges(t *testing.T) {
	ranges := BlockedRanges()
	sawIPv6 := false
	for i, p := range ranges {
		if p.String() != blockedRanges[i] || p.Masked() != p {
			t.Errorf("range %q is not canonical (%s)", blockedRanges[i], p.Masked())
		}
		if sawIPv6 = sawIPv6 || p.Addr().Is6(); sawIPv6 && p.Addr().Is4() {
			t.Errorf("IPv4 range %s after an IPv6 one", p)
		}
	}
	ranges[0] = netip.MustParsePrefix("1.0.0.0/8")
	if BlockedRanges()[0] == ranges[0] {
		t.Error("changing the slice BlockedRanges returned changed the list")
	}
	cases := map[string]string{
		"AWS, GCP, Azure metadata":     "169.254.169.254",
		"Alibaba metadata":             "100.100.100.200",
		"Azure WireServer":             "168.63.129.16",
		"AWS IPv6 metadata":            "fd00:ec2::254",
		"NAT64 discovery":              "192.0.0.170",
		"benchmarking":                 "198.19.255.255",
		"class E":                      "240.0.0.1",
		"broadcast":                    "255.255.255.255",
		"NAT64 of the metadata":        "64:ff9b::a9fe:a9fe",
		"local-use NAT64":              "64:ff9b:1::a9fe:a9fe",
		"6to4 of the metadata":         "2002:a9fe:a9fe::1",
		"IPv4-compatible metadata":     "::a9fe:a9fe",
		"Teredo":                       "2001:0:4136:e378::1",
		"IPv6 loopback":                "::1",
		"IPv6 unspecified":             "::",
		"private network":              "10.96.0.1",
		"loopback":                     "127.0.0.1",
		"this network":                 "0.0.0.0",
		"site-local":                   "fec0::1",
		"multicast":                    "ff02::1",
		"link-local":                   "fe80::1",
		"carrier-grade NAT":            "100.64.0.1",
		"IETF protocol assignments":    "192.0.0.9",
		"RFC 1918, the last of them":   "192.168.255.255",
		"RFC 1918, the one in between": "172.31.0.1",
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if !blocked(netip.MustParseAddr(s)) {
				t.Errorf("%s is not blocked", s)
			}
		})
	}
	for _, public := range []string{"93.184.215.14", "8.8.8.8", "2606:4700::1111", "203.0.113.7", "2001:db8::1", "172.32.0.1", "198.20.0.1"} {
		if blocked(netip.MustParseAddr(public)) {
			t.Errorf("the public address %s is blocked", public)
		}
	}
}

func blocked(a netip.Addr) bool {
	for _, p := range BlockedRanges() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
