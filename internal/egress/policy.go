package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// DefaultPorts are the ports a Policy without Ports allows.
var DefaultPorts = []int{80, 443}

// Policy is what one sandbox may reach.
type Policy struct {
	// AllowDomains lists exact names ("pypi.org") and wildcards ("*.pythonhosted.org": any name
	// below it, not the name itself). A name matching none is denied.
	AllowDomains []string
	// DenyDomains wins over AllowDomains.
	DenyDomains []string
	// AllowCIDRs lets the sandbox reach these addresses by IP, and names that resolve into
	// blocked ranges when the address is inside one of them.
	AllowCIDRs []netip.Prefix
	// DenyCIDRs refuses these addresses whatever resolves to them.
	DenyCIDRs []netip.Prefix
	// Ports the sandbox may reach; empty: DefaultPorts.
	Ports []int
	// Credentials are headers the proxy adds to HTTPS requests for their domains.
	Credentials []Credential
}

// Credential is a header added to requests for some domains.
type Credential struct {
	// Domains as in Policy.AllowDomains; they must be allowed too.
	Domains []string
	// Header and Value: e.g. "Authorization" and "Bearer sk-...". A value the sandbox sent in
	// that header is replaced.
	Header, Value string
}

// Verdict is a Policy's decision on one destination.
type Verdict struct {
	Allowed bool
	// Reason says why, for the audit log and the refused client.
	Reason string
	// Credentials are those that apply to the destination (allowed only).
	Credentials []Credential
}

// Decide decides on host (a name or an IP literal) and port.
func (p *Policy) Decide(host string, port int) Verdict {
	ports := p.Ports
	if len(ports) == 0 {
		ports = DefaultPorts
	}
	if !slices.Contains(ports, port) {
		return Verdict{Reason: fmt.Sprintf("port %d is not among the allowed ports %v", port, ports)}
	}
	if addr, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if inAny(p.DenyCIDRs, addr) || !inAny(p.AllowCIDRs, addr) {
			return Verdict{Reason: fmt.Sprintf("%s is an IP address outside the allowed CIDRs; reach hosts by their domain name", addr)}
		}
		return Verdict{Allowed: true, Reason: "allowed CIDR"}
	}
	name := canonical(host)
	if d := firstMatch(p.DenyDomains, name); d != "" {
		return Verdict{Reason: fmt.Sprintf("%s matches the denied domain %s", name, d)}
	}
	d := firstMatch(p.AllowDomains, name)
	if d == "" {
		return Verdict{Reason: fmt.Sprintf("%s is not in the allowed domains", name)}
	}
	v := Verdict{Allowed: true, Reason: "allowed domain " + d}
	for _, c := range p.Credentials {
		if firstMatch(c.Domains, name) != "" {
			v.Credentials = append(v.Credentials, c)
		}
	}
	return v
}

// AllowsAddress reports whether a name's resolved address may be dialed: not denied, and outside
// blocked unless allowed.
func (p *Policy) AllowsAddress(addr netip.Addr, blocked []netip.Prefix) (bool, string) {
	addr = addr.Unmap()
	if inAny(p.DenyCIDRs, addr) {
		return false, fmt.Sprintf("it resolves to %s, in a denied CIDR", addr)
	}
	if inAny(blocked, addr) && !inAny(p.AllowCIDRs, addr) {
		return false, fmt.Sprintf("it resolves to %s, an internal address (private, loopback, link-local or metadata range)", addr)
	}
	return true, ""
}

// Matches reports whether name matches pattern: exact, or "*.suffix" for any name below suffix.
func Matches(pattern, name string) bool {
	pattern, name = canonical(pattern), canonical(name)
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(name, "."+suffix)
	}
	return pattern == name
}

func firstMatch(patterns []string, name string) string {
	for _, p := range patterns {
		if Matches(p, name) {
			return p
		}
	}
	return ""
}

func canonical(name string) string { return strings.TrimSuffix(strings.ToLower(name), ".") }

func inAny(prefixes []netip.Prefix, addr netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// BlockedRanges are the addresses a resolved name may not point to unless a policy allows them:
// loopback, private (RFC 1918, unique local), carrier-grade NAT, link-local (with the cloud
// metadata address 169.254.169.254), unspecified and multicast.
var BlockedRanges = mustPrefixes("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
	"169.254.0.0/16", "0.0.0.0/8", "224.0.0.0/4", "::1/128", "fc00::/7", "fe80::/10", "::/128", "ff00::/8")

func mustPrefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}
