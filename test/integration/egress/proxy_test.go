package egress

import (
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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/egress"
	"github.com/kubox-dev/kubox/internal/egress/sandboxes"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// upstream is a loopback TLS server answering for the made-up names allowed.test, denied.test
// and api.test with certificates of its own CA (the "public" roots of this test), recording the
// headers of each request by host.
type upstream struct {
	srv   *httptest.Server
	roots *x509.CertPool
	mu    sync.Mutex
	seen  map[string]http.Header
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	ca, err := egress.NewCA("test servers", []string{"allowed.test", "denied.test", "api.test"})
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{roots: ca.Pool(), seen: map[string]http.Header{}}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen[strings.Split(r.Host, ":")[0]] = r.Header.Clone()
		u.mu.Unlock()
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	u.srv.TLS = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.Leaf(h.ServerName) }}
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) port() int32 {
	p, _ := strconv.Atoi(u.srv.URL[strings.LastIndex(u.srv.URL, ":")+1:])
	return int32(p)
}

func (u *upstream) header(host, name string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if h := u.seen[host]; h != nil {
		return h.Get(name)
	}
	return "<no request>"
}

// startEgress runs kubox-egress's policy source and proxy in this process for namespace ns,
// resolving every test name to 127.0.0.1 (loopback is not blocked here, as the test servers are
// on it), and returns the proxy's URL and its log.
func startEgress(t *testing.T, ns string, roots *x509.CertPool) (*url.URL, *testutil.SyncBuffer) {
	t.Helper()
	log := &testutil.SyncBuffer{}
	src, err := sandboxes.New(env.Config, sandboxes.Config{Namespace: ns, SecretTTL: 200 * time.Millisecond, Log: slog.New(slog.NewJSONHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = src.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !src.WaitForSync(ctx) {
		t.Fatal("the policy source's informers did not sync")
	}
	p := egress.New(egress.Config{
		Identify: src.Identify,
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if strings.HasSuffix(host, ".test") {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		},
		Blocked:       []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")},
		UpstreamRoots: roots,
		Log:           slog.New(slog.NewJSONHandler(log, nil)),
	})
	ps := httptest.NewServer(p)
	t.Cleanup(ps.Close)
	u, _ := url.Parse(ps.URL)
	return u, log
}

// sandboxClient is code in a sandbox whose Pod has IP src: it uses the proxy and trusts roots.
func sandboxClient(proxy *url.URL, src string, roots *x509.CertPool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(proxy), DialContext: d.DialContext, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

func get(c *http.Client, u string) (int, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestProxyLearnsPolicyAndCredential runs the whole path: the controllers build a claim's
// sandbox from a template with egress, the test kubelet gives its Pod a loopback IP, and
// kubox-egress, learning Pod IP -> Sandbox -> policy from the API server, lets that sandbox reach
// allowed.test untouched, adds the Secret's credential for api.test (through the sandbox's own
// CA, from the Secret the controller made), refuses denied.test, a raw IP and an unknown source,
// picks up a rotated Secret, and logs each attempt.
func TestProxyLearnsPolicyAndCredential(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, nil)
	env.StartKubelet(t, ns, framework.WithLoopbackPodIPs())
	up := startUpstream(t)
	env.Create(t, apiKeySecret(ns, secretValue))
	env.Create(t, egressTemplate(ns, "agent", up.port()))
	env.Create(t, testutil.MakeClaim("c", ns).Template("agent").Obj())

	pod := framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}, func(p *corev1.Pod) (bool, string) {
		return p.Status.PodIP != "", "Pod has no IP yet"
	})
	caSecret := framework.WaitForObject(t, env, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sandboxv1beta1.EgressCASecretName("c")}}, nil)
	// The sandbox trusts its image's roots (here: the test servers' CA) and the mounted egress CA.
	trust := up.roots.Clone()
	if !trust.AppendCertsFromPEM(caSecret.Data[sandboxv1beta1.EgressCACertKey]) {
		t.Fatal("the egress CA certificate is not PEM")
	}
	proxy, log := startEgress(t, ns, up.roots)
	sandbox := sandboxClient(proxy, pod.Status.PodIP, trust)
	at := func(host string) string { return fmt.Sprintf("https://%s:%d/", host, up.port()) }

	framework.Eventually(t, func() (bool, string) {
		code, body, err := get(sandbox, at("api.test"))
		return err == nil && code == http.StatusOK, fmt.Sprintf("api.test: %d %q %v", code, body, err)
	})
	if got := up.header("api.test", "Authorization"); got != "Bearer "+secretValue {
		t.Errorf("api.test received Authorization %q; want the Secret's bearer token", got)
	}
	if code, body, err := get(sandbox, at("allowed.test")); err != nil || code != http.StatusOK || !strings.Contains(body, "hello from allowed.test") {
		t.Errorf("allowed.test: %d %q %v; want passed through", code, body, err)
	}
	if got := up.header("allowed.test", "Authorization"); got != "" {
		t.Errorf("allowed.test received Authorization %q; the credential is for api.test only", got)
	}
	for _, refused := range []string{at("denied.test"), at("elsewhere.test"), fmt.Sprintf("https://127.0.0.1:%d/", up.port())} {
		if _, _, err := get(sandbox, refused); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("GET %s: %v; want the proxy's refusal (403)", refused, err)
		}
	}
	if _, _, err := get(sandboxClient(proxy, "127.0.0.1", trust), at("allowed.test")); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("GET from a source that is no sandbox: %v; want the proxy's refusal", err)
	}

	t.Log("The Secret rotates: the proxy sends the new value within its TTL")
	framework.Update(t, env, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-key"}}, func(s *corev1.Secret) {
		s.Data = map[string][]byte{"token": []byte("sk-rotated")}
	})
	framework.Eventually(t, func() (bool, string) {
		_, _, _ = get(sandbox, at("api.test"))
		got := up.header("api.test", "Authorization")
		return got == "Bearer sk-rotated", "Authorization " + got
	})

	audit := map[string]string{} // domain -> verdict, of the sandbox
	unknownDenied := false
	for _, line := range strings.Split(log.String(), "\n") {
		var l struct{ Msg, Sandbox, Domain, Verdict string }
		switch {
		case json.Unmarshal([]byte(line), &l) != nil || l.Msg != "Egress":
		case l.Sandbox == ns+"/c":
			audit[l.Domain] = l.Verdict
		case l.Sandbox == "":
			unknownDenied = unknownDenied || l.Verdict == "denied"
		}
	}
	if !unknownDenied {
		t.Error("audit log: no denied line for the unknown source")
	}
	for domain, verdict := range map[string]string{"api.test": "allowed", "allowed.test": "allowed", "denied.test": "denied", "elsewhere.test": "denied", "127.0.0.1": "denied"} {
		if audit[domain] != verdict {
			t.Errorf("audit log: %s %q; want %s (log: %v)", domain, audit[domain], verdict, audit)
		}
	}
}
