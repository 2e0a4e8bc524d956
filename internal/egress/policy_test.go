package egress

import (
	"net/netip"
	"strings"
	"testing"
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
		v := p.Decide(c.host, c.port)
		if v.Allowed != c.allowed || !strings.Contains(v.Reason, c.reason) || len(v.Credentials) != c.creds {
			t.Errorf("Decide(%s, %d) = %+v; want allowed %v, reason with %q, %d credentials", c.host, c.port, v, c.allowed, c.reason, c.creds)
		}
	}
	if v := (&Policy{}).Decide("pypi.org", 443); v.Allowed {
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
