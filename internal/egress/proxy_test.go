package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// world is a proxy between test "sandboxes" (clients bound to loopback source addresses) and
// test servers behind made-up names that resolve to loopback: no traffic leaves the machine.
type world struct {
	proxyURL *url.URL
	reg      *prometheus.Registry
	auditMu  sync.Mutex
	audit    bytes.Buffer
	plain    *httptest.Server // allowed.test, denied.test, inward.test (HTTP)
	tls      *httptest.Server // allowed.test, api.test (HTTPS, test CA)
	seen     chan http.Header // headers the TLS server received
	upstream *x509.CertPool   // trusts the TLS server
	ca       *CA
}

func (w *world) Write(b []byte) (int, error) {
	w.auditMu.Lock()
	defer w.auditMu.Unlock()
	return w.audit.Write(b)
}

// auditLines returns the audit lines logged so far.
func (w *world) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	w.auditMu.Lock()
	defer w.auditMu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(w.audit.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err == nil && m["msg"] == "Egress" {
			out = append(out, m)
		}
	}
	return out
}

func port(t testing.TB, s *httptest.Server) int {
	t.Helper()
	_, p := splitHostPort(strings.TrimPrefix(strings.TrimPrefix(s.URL, "https://"), "http://"), 0)
	return p
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{reg: prometheus.NewRegistry(), seen: make(chan http.Header, 16)}
	w.plain = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { fmt.Fprintf(rw, "plain %s", r.Host) }))
	t.Cleanup(w.plain.Close)
	serverCA, err := NewCA("test servers", []string{"allowed.test", "api.test"})
	if err != nil {
		t.Fatal(err)
	}
	w.upstream = serverCA.Pool()
	w.tls = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.seen <- r.Header.Clone()
		if r.URL.Path == "/big" {
			_, _ = io.CopyN(rw, zeros{}, 8<<20)
			return
		}
		fmt.Fprintf(rw, "tls %s", r.Host)
	}))
	w.tls.TLS = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return serverCA.Leaf(h.ServerName) }}
	w.tls.StartTLS()
	t.Cleanup(w.tls.Close)
	if w.ca, err = NewCA("team-a/a", []string{"api.test"}); err != nil {
		t.Fatal(err)
	}
	ports := []int{port(t, w.plain), port(t, w.tls)}
	sandboxA := &Sandbox{Name: "team-a/a", CA: w.ca, Policy: &Policy{
		AllowDomains: []string{"allowed.test", "api.test", "inward.test"},
		DenyDomains:  []string{"denied.test"},
		Ports:        ports,
		Credentials:  []Credential{{Domains: []string{"api.test"}, Header: "Authorization", Value: "Bearer from-the-proxy"}},
	}}
	sandboxB := &Sandbox{Name: "team-b/b", Policy: &Policy{AllowDomains: []string{"other.test"}, Ports: ports}}
	loopback := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("169.254.0.0/16")} // BlockedRanges minus 127/8
	p := New(Config{
		Identify: func(src netip.Addr) (*Sandbox, error) {
			switch src.String() {
			case "127.0.0.1":
				return sandboxA, nil
			case "127.0.0.2":
				return sandboxB, nil
			}
			return nil, UnknownSource(src)
		},
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "allowed.test", "denied.test", "api.test", "other.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "inward.test": // never dialed: the policy refuses it first
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		},
		Blocked:       loopback,
		UpstreamRoots: w.upstream,
		Log:           slog.New(slog.NewJSONHandler(w, nil)),
		Registerer:    w.reg,
	})
	ps := httptest.NewServer(p)
	t.Cleanup(ps.Close)
	w.proxyURL, _ = url.Parse(ps.URL)
	return w
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// client is a sandbox at source address src that trusts roots, using the proxy.
func (w *world) client(src string, roots *x509.CertPool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(w.proxyURL), DialContext: d.DialContext,
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true,
	}}
}

func get(c *http.Client, u string, hdr ...string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestProxyEnforcesThePolicy(t *testing.T) {
	w := newWorld(t)
	upstream := w.upstream
	a := w.client("127.0.0.1", upstream)
	pp, tp := port(t, w.plain), port(t, w.tls)

	if code, body, err := get(a, fmt.Sprintf("http://allowed.test:%d/", pp)); err != nil || code != 200 || body != fmt.Sprintf("plain allowed.test:%d", pp) {
		t.Errorf("plain HTTP to an allowed domain: %d %q %v", code, body, err)
	}
	// HTTPS to an allowed domain passes through: the client sees the server's own certificate.
	if code, body, err := get(a, fmt.Sprintf("https://allowed.test:%d/", tp)); err != nil || code != 200 || !strings.HasPrefix(body, "tls allowed.test") {
		t.Errorf("HTTPS to an allowed domain: %d %q %v", code, body, err)
	} else if h := <-w.seen; h.Get("Authorization") != "" {
		t.Errorf("a passed-through request carried Authorization %q", h.Get("Authorization"))
	}
	for _, c := range []struct{ url, want string }{
		{fmt.Sprintf("https://denied.test:%d/", tp), "denied domain denied.test"},
		{fmt.Sprintf("http://denied.test:%d/", pp), "denied domain denied.test"},
		{fmt.Sprintf("https://unlisted.test:%d/", tp), "not in the allowed domains"},
		{fmt.Sprintf("https://127.0.0.1:%d/", tp), "IP address outside the allowed CIDRs"},
		{fmt.Sprintf("http://inward.test:%d/", pp), "internal address"},
		{"https://allowed.test:22/", "port 22"},
		{fmt.Sprintf("http://api.test:%d/", pp), "only over HTTPS"},
	} {
		code, body, err := get(a, c.url)
		// Go's client turns a refused CONNECT into an error carrying the status; plain HTTP gets the body.
		if got := fmt.Sprint(code, body, err); !strings.Contains(got, "403") && !strings.Contains(got, "Forbidden") {
			t.Errorf("%s: %s; want 403", c.url, got)
		}
		if code == 403 && !strings.Contains(body, c.want) {
			t.Errorf("%s: refusal %q does not say %q", c.url, body, c.want)
		}
	}
	// Another sandbox has its own policy; an unknown source has none.
	if code, _, err := get(w.client("127.0.0.2", upstream), fmt.Sprintf("http://allowed.test:%d/", pp)); code != 403 {
		t.Errorf("sandbox b to a domain only a allows: %d %v; want 403", code, err)
	}
	if code, body, _ := get(w.client("127.0.0.3", upstream), fmt.Sprintf("http://allowed.test:%d/", pp)); code != 403 || !strings.Contains(body, "not a sandbox") {
		t.Errorf("an unknown source: %d %q; want 403", code, body)
	}

	lines := w.auditLines(t)
	denied, allowed := 0, 0
	for _, l := range lines {
		switch l["verdict"] {
		case "denied":
			denied++
		case "allowed":
			allowed++
		}
	}
	if denied != 9 || allowed < 1 { // the tunnel's line comes when it closes
		t.Errorf("audit lines: %d denied, %d allowed; want 9 denied and the allowed ones:\n%v", denied, allowed, lines)
	}
	if n := w.counter("kubox_egress_connections_total", "verdict", "denied"); n != 9 {
		t.Errorf("kubox_egress_connections_total{verdict=denied} = %v; want 9", n)
	}
}

// counter sums the series of metric name whose label has value.
func (w *world) counter(name, label, value string) float64 {
	mfs, _ := w.reg.Gather()
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestProxyAddsCredentialsTheSandboxNeverHolds checks the inspected path: the sandbox trusts
// only its egress CA, sends its own Authorization (which is replaced), and the server gets the
// proxy's credential; a request for another host inside that connection is refused.
func TestProxyAddsCredentialsTheSandboxNeverHolds(t *testing.T) {
	w := newWorld(t)
	a := w.client("127.0.0.1", w.ca.Pool()) // the sandbox trusts its egress CA, not the server's
	u := fmt.Sprintf("https://api.test:%d/v1", port(t, w.tls))
	code, body, err := get(a, u, "Authorization", "Bearer forged-by-the-sandbox")
	if err != nil || code != 200 || !strings.HasPrefix(body, "tls api.test") {
		t.Fatalf("HTTPS to the credential domain: %d %q %v", code, body, err)
	}
	if h := <-w.seen; h.Get("Authorization") != "Bearer from-the-proxy" {
		t.Errorf("the server got Authorization %q; want the proxy's credential", h.Get("Authorization"))
	}
	// The egress CA cannot vouch for any other name: a pass-through domain is verified against
	// its real certificate, which the sandbox here does not trust.
	if _, _, err := get(a, fmt.Sprintf("https://allowed.test:%d/", port(t, w.tls))); err == nil {
		t.Error("the sandbox trusted allowed.test through its egress CA alone")
	}
	// Inside the inspected connection, a request naming another host is refused (421).
	conn := w.connectThrough(t, "127.0.0.1", fmt.Sprintf("api.test:%d", port(t, w.tls)))
	tc := tls.Client(conn, &tls.Config{ServerName: "api.test", RootCAs: w.ca.Pool()})
	_, _ = fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: allowed.test:%d\r\nConnection: close\r\n\r\n", port(t, w.tls))
	resp, _ := io.ReadAll(tc)
	if !bytes.Contains(resp, []byte("421")) {
		t.Errorf("a request for another host inside api.test's connection: %q; want 421", firstLine(resp))
	}
	inspected := 0
	for _, l := range w.auditLines(t) {
		if l["mode"] == "inspected" && l["verdict"] == "allowed" && l["domain"] == "api.test" {
			inspected++
		}
	}
	if inspected < 1 {
		t.Errorf("no audit line for the inspected request: %v", w.auditLines(t))
	}
}

// connectThrough opens a CONNECT tunnel to hostport from source src.
func (w *world) connectThrough(t *testing.T, src, hostport string) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", w.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, _ = fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	buf := make([]byte, 0, 256)
	one := make([]byte, 1)
	for !bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
		if _, err := c.Read(one); err != nil {
			t.Fatalf("reading the CONNECT reply: %v (%q)", err, buf)
		}
		buf = append(buf, one[0])
	}
	if !bytes.Contains(buf, []byte(" 200 ")) {
		t.Fatalf("CONNECT %s: %q", hostport, firstLine(buf))
	}
	return c
}

func firstLine(b []byte) string { l, _, _ := bytes.Cut(b, []byte("\r\n")); return string(l) }

// TestTunnelIsAudited checks a passed-through tunnel's audit line: address and bytes.
func TestTunnelIsAudited(t *testing.T) {
	w := newWorld(t)
	upstream := w.upstream
	code, body, err := get(w.client("127.0.0.1", upstream), fmt.Sprintf("https://allowed.test:%d/big", port(t, w.tls)))
	if err != nil || code != 200 || len(body) != 8<<20 {
		t.Fatalf("download through the tunnel: %d, %d bytes, %v", code, len(body), err)
	}
	<-w.seen
	var line map[string]any
	for range 100 {
		for _, l := range w.auditLines(t) {
			if l["mode"] == "tunnel" && l["verdict"] == "allowed" {
				line = l
			}
		}
		if line != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line == nil {
		t.Fatalf("no audit line for the tunnel: %v", w.auditLines(t))
	}
	if line["address"] != "127.0.0.1" || line["sandbox"] != "team-a/a" || line["bytesDown"].(float64) < 8<<20 || line["bytesUp"].(float64) <= 0 {
		t.Errorf("tunnel audit line %v; want the address, the sandbox and at least 8 MiB down", line)
	}
}
