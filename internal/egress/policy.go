package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kubox-dev/kubox/api/contract"
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
	// AllowCIDRs lets the sandbox reach these addresses by IP. One that lies inside a blocked
	// range also opens that part of it, to IP literals and resolved names alike; a wider one
	// ("0.0.0.0/0") opens nothing blocked. Canonical prefixes (CanonicalPrefix).
	AllowCIDRs []netip.Prefix
	// DenyCIDRs refuses these addresses whatever resolves to them. Canonical prefixes.
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

// Decide decides on host (a name or an IP literal, bracketed or not) and port. An IP literal
// must be in AllowCIDRs and pass the checks of a resolved address (AllowsAddress) against
// blocked: a literal is never a way around them.
func (p *Policy) Decide(host string, port int, blocked []netip.Prefix) Verdict {
	ports := p.Ports
	if len(ports) == 0 {
		ports = DefaultPorts
	}
	if !slices.Contains(ports, port) {
		return Verdict{Reason: fmt.Sprintf("port %d is not among the allowed ports %v", port, ports)}
	}
	if addr, ok := Literal(host); ok {
		if !inAny(p.AllowCIDRs, addr) {
			return Verdict{Reason: fmt.Sprintf("%s is an IP address outside the allowed CIDRs; reach hosts by their domain name", addr)}
		}
		if ok, why := p.AllowsAddress(addr, blocked); !ok {
			return Verdict{Reason: why}
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

// AllowsAddress reports whether addr (an IP literal, or what a name resolved to) may be dialed,
// and if not why. addr is judged as every address it stands for (CanonicalAddr, and the IPv4
// address inside a NAT64 or 6to4 one): none may be in DenyCIDRs, and none in blocked unless
// AllowCIDRs opens it (opens).
func (p *Policy) AllowsAddress(addr netip.Addr, blocked []netip.Prefix) (bool, string) {
	for _, a := range standsFor(addr) {
		if inAny(p.DenyCIDRs, a) {
			return false, fmt.Sprintf("%s is in a denied CIDR", describe(addr, a))
		}
		if inAny(blocked, a) && !opens(p.AllowCIDRs, blocked, a) {
			return false, fmt.Sprintf("%s is an internal address (private, loopback, link-local, metadata or reserved range); "+
				"only an allowed CIDR inside that range opens it", describe(addr, a))
		}
	}
	return true, ""
}

// opens reports whether an allowed CIDR holds addr and lies inside a blocked range itself: an
// operator opens an internal range by naming it ("10.1.0.0/16", "169.254.169.254/32"), never by
// allowing everything ("0.0.0.0/0", "::/0"), as a NetworkPolicy's ipBlock keeps its excepts.
func opens(allow, blocked []netip.Prefix, addr netip.Addr) bool {
	for _, a := range allow {
		if !a.Contains(addr) {
			continue
		}
		for _, b := range blocked {
			if b.Bits() <= a.Bits() && b.Contains(a.Addr()) {
				return true
			}
		}
	}
	return false
}

// Literal returns host as an IP address when it is one ("203.0.113.7", "[2001:db8::1]",
// "::ffff:169.254.169.254"), in canonical form (CanonicalAddr).
func Literal(host string) (netip.Addr, bool) {
	addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return CanonicalAddr(addr), true
}

// CanonicalAddr is the address addr reaches, as the proxy compares it with prefixes: an
// IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 address, and a zone (fe80::1%eth0, an
// interface of the proxy's host) is dropped, as netip.Prefix.Contains matches no zoned address.
func CanonicalAddr(addr netip.Addr) netip.Addr { return addr.Unmap().WithZone("") }

// CanonicalPrefix is p with its address canonical: an IPv4-mapped prefix (::ffff:10.0.0.0/104)
// is the IPv4 prefix (10.0.0.0/8), so a range written either way matches the same addresses.
func CanonicalPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96).Masked()
	}
	return netip.PrefixFrom(p.Addr().WithZone(""), p.Bits()).Masked()
}

// Prefixes that carry an IPv4 address a translator or relay delivers to: NAT64's well-known
// prefix (RFC 6052, the address in the last 32 bits) and 6to4 (RFC 3056, in bits 16-47).
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// standsFor is addr in canonical form, and the IPv4 address inside it when it embeds one.
func standsFor(addr netip.Addr) []netip.Addr {
	addr = CanonicalAddr(addr)
	b := addr.As16()
	switch {
	case nat64Prefix.Contains(addr):
		return []netip.Addr{addr, netip.AddrFrom4([4]byte(b[12:16]))}
	case sixToFour.Contains(addr):
		return []netip.Addr{addr, netip.AddrFrom4([4]byte(b[2:6]))}
	}
	return []netip.Addr{addr}
}

// describe names addr in a refusal, with the IPv4 address a it stands for when they differ.
func describe(addr, a netip.Addr) string {
	if c := CanonicalAddr(addr); c != a {
		return fmt.Sprintf("%s (%s)", c, a)
	}
	return a.String()
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

// BlockedRanges are the addresses a sandbox may not reach unless its policy's AllowCIDRs
// open them (see opens): contract.BlockedRanges, the list the secure default NetworkPolicy
// excepts too.
var BlockedRanges = contract.BlockedRanges()
