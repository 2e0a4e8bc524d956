package egress

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The attacks of issue #36 on the proxy's address checks: a sandbox names an internal address
// in another encoding (IPv4-mapped, NAT64, 6to4, IPv4-compatible, with a zone), hoping a check
// that compares IPv4 prefixes with IPv6 addresses lets it through.

// metadataStandIn is a listener on 127.0.0.1 standing in for the cloud metadata service: the
// proxy's default blocked ranges hold 127.0.0.0/8 as they hold 169.254.0.0/16. It counts the
// requests that reach it.
func metadataStandIn(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "iam credentials of the node")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// attackProxy is a proxy with the default blocked ranges whose one sandbox, at 127.0.0.1, has
// policy p; every name resolves to 127.0.0.1.
func attackProxy(t *testing.T, p *Policy) *url.URL {
	t.Helper()
	proxy := New(Config{
		Identify: func(src netip.Addr) (*Sandbox, error) {
			if src != netip.MustParseAddr("127.0.0.1") {
				return nil, UnknownSource(src)
			}
			return &Sandbox{Name: "team-a/a", Policy: p}, nil
		},
		Resolve: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		Log: slog.New(slog.DiscardHandler),
	})
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	u, _ := url.Parse(ps.URL)
	return u
}

// TestAttackMappedLiteralReachesBlockedRange: with allowCIDRs [::/0] (every IPv6 address) a
// sandbox asks for http://[::ffff:127.0.0.1]:port/, the IPv4-mapped form of an address in a
// blocked range (the stand-in for [::ffff:169.254.169.254]), over plain HTTP and CONNECT, also
// with that range in denyCIDRs. The proxy must refuse without dialing.
func TestAttackMappedLiteralReachesBlockedRange(t *testing.T) {
	srv, hits := metadataStandIn(t)
	_, port := splitHostPort(strings.TrimPrefix(srv.URL, "http://"), 0)
	cases := map[string]struct {
		policy *Policy
		url    string
	}{
		"plain HTTP, allowCIDRs ::/0": {
			policy: &Policy{AllowCIDRs: mustPrefixes("::/0"), Ports: []int{port}},
			url:    fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/latest/meta-data/", port),
		},
		"plain HTTP, allowCIDRs ::/0, the range denied": {
			policy: &Policy{AllowCIDRs: mustPrefixes("::/0"), DenyCIDRs: mustPrefixes("127.0.0.0/8"), Ports: []int{port}},
			url:    fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/latest/meta-data/", port),
		},
		"plain HTTP, hexadecimal mapped form": {
			policy: &Policy{AllowCIDRs: mustPrefixes("::/0"), Ports: []int{port}},
			url:    fmt.Sprintf("http://[::ffff:7f00:1]:%d/", port),
		},
		"CONNECT, allowCIDRs ::/0": {
			policy: &Policy{AllowCIDRs: mustPrefixes("::/0"), Ports: []int{port}},
			url:    fmt.Sprintf("https://[::ffff:127.0.0.1]:%d/", port),
		},
		"plain HTTP, allowCIDRs 0.0.0.0/0 (every IPv4 address) does not open blocked ranges": {
			policy: &Policy{AllowCIDRs: mustPrefixes("0.0.0.0/0"), Ports: []int{port}},
			url:    fmt.Sprintf("http://127.0.0.1:%d/", port),
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before := hits.Load()
			proxy := attackProxy(t, c.policy)
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}
			client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), DialContext: d.DialContext, DisableKeepAlives: true}}
			code, body, err := get(client, c.url)
			if got := hits.Load() - before; got != 0 {
				t.Errorf("GET %s through the proxy: the blocked address was dialed (%d requests reached it; answer %d %q)", c.url, got, code, body)
			}
			if got := fmt.Sprint(code, body, err); !strings.Contains(got, "403") && !strings.Contains(got, "Forbidden") {
				t.Errorf("GET %s: %s; want the proxy's refusal (403)", c.url, got)
			}
		})
	}
}

// TestAttackEncodedLiteralsAreDecidedAsTheirIPv4 decides, without dialing, on every encoding of
// the metadata address (and of a denied public range) under policies whose allowCIDRs take in
// all of IPv6 or all of IPv4.
func TestAttackEncodedLiteralsAreDecidedAsTheirIPv4(t *testing.T) {
	allIPv6 := &Policy{AllowCIDRs: mustPrefixes("::/0"), DenyCIDRs: mustPrefixes("203.0.113.0/24")}
	allIP := &Policy{AllowCIDRs: mustPrefixes("::/0", "0.0.0.0/0")}
	cases := map[string]struct {
		policy *Policy
		host   string
	}{
		"IPv4-mapped metadata":              {allIPv6, "[::ffff:169.254.169.254]"},
		"IPv4-mapped metadata, no brackets": {allIPv6, "::ffff:169.254.169.254"},
		"IPv4-mapped metadata, hex":         {allIPv6, "[::ffff:a9fe:a9fe]"},
		"IPv4-mapped denied range":          {allIPv6, "[::ffff:203.0.113.7]"},
		"NAT64 metadata":                    {allIPv6, "[64:ff9b::169.254.169.254]"},
		"NAT64 metadata, hex":               {allIPv6, "[64:ff9b::a9fe:a9fe]"},
		"NAT64 local-use prefix":            {allIPv6, "[64:ff9b:1::a9fe:a9fe]"},
		"6to4 metadata":                     {allIPv6, "[2002:a9fe:a9fe::1]"},
		"IPv4-compatible metadata":          {allIPv6, "[::169.254.169.254]"},
		"Teredo":                            {allIPv6, "[2001:0:a9fe:a9fe::1]"},
		"link-local with a zone":            {allIPv6, "[fe80::1%eth0]"},
		"unique local with a zone":          {allIPv6, "[fd00:ec2::254%25eth0]"},
		"metadata under allowCIDRs 0/0":     {allIP, "169.254.169.254"},
		"Azure wireserver":                  {allIP, "168.63.129.16"},
		"IETF protocol assignments":         {allIP, "192.0.0.170"},
		"benchmarking range":                {allIP, "198.18.0.1"},
		"reserved class E":                  {allIP, "240.0.0.1"},
		"limited broadcast":                 {allIP, "255.255.255.255"},
		"mapped wireserver":                 {allIP, "[::ffff:168.63.129.16]"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if v := c.policy.Decide(c.host, 80, BlockedRanges); v.Allowed {
				t.Errorf("Decide(%s) = allowed (%s); want refused", c.host, v.Reason)
			}
		})
	}
}

// TestAttackEncodedAnswersAreDecidedAsTheirIPv4: a name the sandbox may reach resolves (its DNS
// is the attacker's) to an encoded internal address.
func TestAttackEncodedAnswersAreDecidedAsTheirIPv4(t *testing.T) {
	p := &Policy{AllowDomains: []string{"evil.test"}, AllowCIDRs: mustPrefixes("::/0")}
	for _, addr := range []string{"::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::a9fe:a9fe", "::ffff:168.63.129.16", "64:ff9b::1.2.3.4"} {
		t.Run(addr, func(t *testing.T) {
			if ok, why := p.AllowsAddress(netip.MustParseAddr(addr), BlockedRanges); ok {
				t.Errorf("AllowsAddress(%s) = allowed (%s); want refused", addr, why)
			}
		})
	}
}

func mustPrefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}
