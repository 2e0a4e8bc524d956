package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/api/contract"
)

func TestDecide(t *testing.T) {
	p := &Policy{
		AllowDomains: []string{"pypi.org", "*.pythonhosted.org", "API.test."},
		DenyDomains:  []string{"evil.pythonhosted.org"},
		AllowCIDRs:   []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		Credentials:  []Credential{{Domains: []string{"api.test"}, Header: "X-Api-Key", Value: "k"}},
	}
	for _, c := range []struct {
		host    string
		port    int
		allowed bool
		reason  string
		creds   int
	}{
		{"pypi.org", 443, true, "allowed domain pypi.org", 0},
		{"PyPI.org.", 443, true, "allowed domain", 0},
		{"files.pythonhosted.org", 443, true, "*.pythonhosted.org", 0},
		{"pythonhosted.org", 443, false, "not in the allowed domains", 0},
		{"evil.pythonhosted.org", 443, false, "denied domain", 0},
		{"notpypi.org", 443, false, "not in the allowed domains", 0},
		{"pypi.org.evil.com", 443, false, "not in the allowed domains", 0},
		{"pypi.org", 22, false, "port 22", 0},
		{"api.test", 80, true, "", 1},
		{"203.0.113.7", 443, true, "allowed CIDR", 0},
		{"198.51.100.7", 443, false, "IP address outside", 0},
		{"[2001:db8::1]", 443, false, "IP address outside", 0},
	} {
		v := p.Decide(c.host, c.port, BlockedRanges)
		if v.Allowed != c.allowed || !strings.Contains(v.Reason, c.reason) || len(v.Credentials) != c.creds {
			t.Errorf("Decide(%s, %d) = %+v; want allowed %v, reason with %q, %d credentials", c.host, c.port, v, c.allowed, c.reason, c.creds)
		}
	}
	if v := (&Policy{}).Decide("pypi.org", 443, BlockedRanges); v.Allowed {
		t.Error("an empty policy allowed a domain; egress by domain is default deny")
	}
}

func TestAllowsAddress(t *testing.T) {
	p := &Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, DenyCIDRs: []netip.Prefix{netip.MustParsePrefix("8.8.8.0/24")}}
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "169.254.169.254": false, "10.2.0.1": false, "10.1.2.3": true,
		"127.0.0.1": false, "8.8.8.8": false, "::ffff:192.168.1.1": false, "fd00::1": false,
	} {
		if got, why := p.AllowsAddress(netip.MustParseAddr(addr), BlockedRanges); got != want {
			t.Errorf("AllowsAddress(%s) = %v (%s); want %v", addr, got, why, want)
		}
	}
}

// TestAllowCIDRsOpenOnlyWhatTheyName: an allowed CIDR inside a blocked range opens that part of
// it, to literals and resolved names alike; a wider one opens nothing blocked.
func TestAllowCIDRsOpenOnlyWhatTheyName(t *testing.T) {
	cases := map[string]struct {
		allow, deny []string
		addr        string
		want        bool
	}{
		"a private range named":          {allow: []string{"10.1.0.0/16"}, addr: "10.1.2.3", want: true},
		"the metadata address named":     {allow: []string{"169.254.169.254/32"}, addr: "169.254.169.254", want: true},
		"a blocked range named whole":    {allow: []string{"10.0.0.0/8"}, addr: "10.200.0.1", want: true},
		"all of IPv4":                    {allow: []string{"0.0.0.0/0"}, addr: "10.1.2.3"},
		"a range wider than the blocked": {allow: []string{"172.0.0.0/8"}, addr: "172.16.0.1"},
		"its public part":                {allow: []string{"172.0.0.0/8"}, addr: "172.1.0.1", want: true},
		"mapped, named as IPv4":          {allow: []string{"10.1.0.0/16"}, addr: "::ffff:10.1.2.3", want: true},
		"NAT64 opened, not its IPv4":     {allow: []string{"64:ff9b::/96"}, addr: "64:ff9b::a9fe:a9fe"},
		"NAT64 and its IPv4 opened":      {allow: []string{"64:ff9b::/96", "169.254.169.254/32"}, addr: "64:ff9b::a9fe:a9fe", want: true},
		"NAT64 to a denied IPv4":         {allow: []string{"64:ff9b::/96"}, deny: []string{"203.0.113.0/24"}, addr: "64:ff9b::cb00:7107"},
		"6to4 to a denied IPv4":          {allow: []string{"2002::/16"}, deny: []string{"203.0.113.0/24"}, addr: "2002:cb00:7107::1"},
		"NAT64 to a public IPv4":         {allow: []string{"64:ff9b::/96"}, addr: "64:ff9b::5db8:d70e", want: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := &Policy{AllowCIDRs: mustPrefixes(c.allow...), DenyCIDRs: mustPrefixes(c.deny...)}
			if got, why := p.AllowsAddress(netip.MustParseAddr(c.addr), BlockedRanges); got != c.want {
				t.Errorf("AllowsAddress(%s) = %v (%s); want %v", c.addr, got, why, c.want)
			}
			if v := p.Decide("["+c.addr+"]", 443, BlockedRanges); v.Allowed != c.want {
				t.Errorf("Decide([%s]) = %+v; want allowed %v", c.addr, v, c.want)
			}
		})
	}
}

func TestCanonicalPrefix(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"IPv4":              {"10.0.0.0/8", "10.0.0.0/8"},
		"IPv4-mapped":       {"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		"IPv4-mapped, host": {"::ffff:169.254.169.254/128", "169.254.169.254/32"},
		"IPv6":              {"2001:db8::/32", "2001:db8::/32"},
		"not masked":        {"10.1.2.3/8", "10.0.0.0/8"},
		"wider than mapped": {"::/0", "::/0"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CanonicalPrefix(netip.MustParsePrefix(c.in)).String(); got != c.want {
				t.Errorf("CanonicalPrefix(%s) = %s; want %s", c.in, got, c.want)
			}
		})
	}
}

// TestBlockedRangesAreTheContract: the proxy refuses the list the secure default NetworkPolicy
// excepts (the sandboxtemplate package checks its side against the same list).
func TestBlockedRangesAreTheContract(t *testing.T) {
	if diff := cmp.Diff(contract.BlockedRanges(), BlockedRanges, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("BlockedRanges (-contract +egress):\n%s", diff)
	}
	if diff := cmp.Diff(contract.BlockedRanges(), New(Config{}).cfg.Blocked, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("a Proxy's default Blocked (-contract +proxy):\n%s", diff)
	}
}
