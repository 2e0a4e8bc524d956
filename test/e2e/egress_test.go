//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	krand "k8s.io/apimachinery/pkg/util/rand"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/internal/devenv"
)

// egressProbe runs in a sandbox whose template has spec.egress; argv[1] is the test servers' IP,
// argv[2:] are host:port pairs to dial directly. It prints one JSON object: each request through
// kubox-egress (urllib follows HTTP_PROXY/HTTPS_PROXY, which the controller set) as its status
// and body or the error, and each direct connection as "open", "timeout" or the error's type.
const egressProbe = `
import json, os, socket, ssl, sys, urllib.request, urllib.error
def get(url, ctx=None):
    try:
        with urllib.request.urlopen(url, timeout=15, context=ctx) as r:
            return {"status": r.status, "body": r.read().decode()}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode()}
    except Exception as e:
        return {"error": type(e).__name__ + ": " + str(e)}
def direct(target):
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        return "open"
    except TimeoutError:
        return "timeout"
    except Exception as e:
        return type(e).__name__ + ": " + str(e)
ip = sys.argv[1]
trusting = ssl.create_default_context(cafile=os.environ["KUBOX_EGRESS_CA_FILE"])
blind = ssl._create_unverified_context()
out = {
    "allowed": get("http://allowed.test/"),
    "allowed-tls": get("https://allowed.test/", blind),
    "denied": get("http://denied.test/"),
    "denied-tls": get("https://denied.test/", blind),
    "raw-ip": get("http://%s/" % ip),
    "api": get("https://api.test/v1/models", trusting),
    "direct": {t: direct(t) for t in sys.argv[2:]},
}
print(json.dumps(out))
`

// traceSearch runs in the sandbox and prints every place the credential's prefix appears: the
// environment of every process and every file outside /proc, /sys and /dev. The prefix is built
// at run time, so the search's own command line does not hold it.
const traceSearch = `
import os, sys
needle = (sys.argv[1] + sys.argv[2]).encode()
found, files = [], 0
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if needle in open("/proc/%s/environ" % pid, "rb").read():
                found.append("/proc/%s/environ" % pid)
        except OSError:
            pass
for root, dirs, names in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for n in names:
        p = os.path.join(root, n)
        try:
            if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) > 64 << 20:
                continue
            files += 1
            if needle in open(p, "rb").read():
                found.append(p)
        except OSError:
            pass
print("searched %d files" % files)
for f in found:
    print("FOUND " + f)
`

// TestEgressByDomainOnTheNode checks issue #19's promises end to end on the local node, where
// kube-network-policies enforces NetworkPolicy and kubox-egress runs on the node: the test's own
// "internet" is a network namespace it creates (servers for allowed.test, denied.test and
// api.test on one address), named to kubox-egress through the environment's egress hosts file.
//
// A sandbox of a template that allows allowed.test and api.test and denies denied.test reaches
// allowed.test over HTTP and HTTPS (passed through: the server's own certificate), is refused
// (403, with the reason) for denied.test and for the servers' raw IP, and cannot bypass the proxy
// to the servers (published on the node's address, which an unpoliced Pod reaches), to another
// sandbox or to the API server; api.test receives the credential
// from the Secret the template names, while no environment or file in the sandbox holds it; and
// every attempt is an audit line of kubox-egress.
func TestEgressByDomainOnTheNode(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	inet := newTestInternet(t)
	secret, claimSecret := "kbxsecret-"+krand.String(24), "kbxsecret-"+krand.String(24)
	srv := inet.serve(t, "allowed.test", "denied.test", "api.test")
	srv.wantAuth, srv.wantKey = "Bearer "+secret, claimSecret
	addEgressHosts(t, inet.ip, "allowed.test", "denied.test", "api.test")

	for name, value := range map[string]string{"api-key": secret, "my-key": claimSecret} {
		if _, err := clientset.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"token": value},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createTemplate(t, ns, "egress", map[string]any{
		"allowDomains": []any{"allowed.test", "api.test"},
		"denyDomains":  []any{"denied.test"},
		"credentials": []any{map[string]any{
			"secretRef": map[string]any{"name": "api-key", "key": "token"},
			"header":    "Authorization", "valuePrefix": "Bearer ", "domains": []any{"api.test"},
		}},
	})
	outsider := createPod(t, ns, pythonPod("outsider", "runc", "sleep", "infinity"))
	// sb-a's claim adds a credential of its own; sb-b gets the template's only.
	claimWithEgress(t, ns, "sb-a", "egress", map[string]any{"credentials": []any{map[string]any{
		"secretRef": map[string]any{"name": "my-key", "key": "token"}, "header": "x-api-key", "domains": []any{"api.test"},
	}}})
	claimFromTemplate(t, ns, "sb-b", "egress")
	waitRunning(t, ns, outsider.Name)
	policedSandboxIP(t, ns, "sb-a", "egress")
	b := policedSandboxIP(t, ns, "sb-b", "egress")

	c := devenv.DefaultConfig()
	node := c.NodeIP().String()
	// Pods here have no route beyond their subnet, so the way around the proxy is the node's
	// own address, where the proxy listens: the servers are published there on other ports.
	bypass := net.JoinHostPort(node, forwardTo(t, node, inet.ip+":80"))
	bypassTLS := net.JoinHostPort(node, forwardTo(t, node, inet.ip+":443"))
	direct := map[string]string{
		bypass:    "the test servers, published on the node's address beside the proxy",
		bypassTLS: "the test servers over TLS, published on the node's address beside the proxy",
		b + ":" + strconv.Itoa(int(configv1alpha1.DefaultAgentPort)): "sandbox sb-b's agent",
		net.JoinHostPort(node, forward(t, node, c.Ports.APIServer)):  "the API server",
	}
	// Control: a Pod no policy selects reaches the servers that way, so only sb-a's policy can
	// stop sb-a (the agent and the API server: see TestNetworkPolicySecureDefault).
	for target, result := range probeInPod(t, ns, outsider.Name, "tcp:"+bypass, "tcp:"+bypassTLS) {
		if result != "open" {
			t.Fatalf("control: a Pod no policy selects cannot reach %s: %s", target, result)
		}
	}
	tok := serviceAccountWithConnect(t, ns, "prober", "sb-a")
	res, err := runThroughRouter(ns, "sb-a", tok, append([]string{"python3", "-c", egressProbe, inet.ip, inet.ip + ":80"}, keys(direct)...)...)
	if err != nil {
		t.Fatalf("run the probe in sb-a: %v", err)
	}
	var got struct {
		Allowed, AllowedTLS, Denied, DeniedTLS, RawIP, API probeResponse
		Direct                                             map[string]string
	}
	if err := json.Unmarshal(fixProbeKeys(res.GetStdout()), &got); err != nil {
		t.Fatalf("probe output %q (stderr %q): %v", res.GetStdout(), res.GetStderr(), err)
	}
	t.Logf("probe: %s", res.GetStdout())

	got.Allowed.expect(t, "http://allowed.test/", 200, "hello allowed.test over http")
	got.AllowedTLS.expect(t, "https://allowed.test/ (passed through)", 200, "hello allowed.test over https")
	got.Denied.expect(t, "http://denied.test/", 403, "denied.test matches the denied domain denied.test")
	if !strings.Contains(got.DeniedTLS.Error, "403") {
		t.Errorf("https://denied.test/: %+v, want the CONNECT refused with 403", got.DeniedTLS)
	}
	got.RawIP.expect(t, "http://"+inet.ip+"/", 403, "is an IP address outside the allowed CIDRs")
	got.API.expect(t, "https://api.test/v1/models", 200, "authorized, with the claim's key")
	res, err = runThroughRouter(ns, "sb-b", serviceAccountWithConnect(t, ns, "prober-b", "sb-b"), "python3", "-c",
		`import os, ssl, urllib.request; print(urllib.request.urlopen("https://api.test/v1/models", timeout=15, context=ssl.create_default_context(cafile=os.environ["KUBOX_EGRESS_CA_FILE"])).read().decode())`)
	if err != nil || strings.TrimSpace(string(res.GetStdout())) != "authorized" {
		t.Errorf("sb-b, whose claim adds no credential, to api.test: %q %q %v; want the template's credential only (\"authorized\")",
			res.GetStdout(), res.GetStderr(), err)
	}
	for target, what := range direct {
		if r := got.Direct[target]; r != "timeout" {
			t.Errorf("sb-a reaches %s at %s directly: %s, want timeout (the policy drops it)", what, target, r)
		}
	}
	if r := got.Direct[inet.ip+":80"]; r == "open" {
		t.Errorf("sb-a reaches the test servers at %s:80 directly, bypassing the proxy", inet.ip)
	}
	srv.checkCredentials(t)
	checkNoTrace(t, ns, tok, secret)
	checkAudit(t, ns+"/sb-a", map[string]string{
		"allowed.test:80": "allowed", "allowed.test:443": "allowed", "denied.test:80": "denied",
		"denied.test:443": "denied", inet.ip + ":80": "denied", "api.test:443": "allowed",
	})
	// The same lines, as a person reads them: `kubox logs --egress` finds no kubox-egress Pod here
	// and reads the node's log.
	out := kuboxOutput(t, ns, "logs", "--egress", "sb-a")
	for _, want := range []string{`"domain":"denied.test"`, `"verdict":"denied"`, `"domain":"api.test"`, `"mode":"inspected"`} {
		if !strings.Contains(out, want) {
			t.Errorf("kubox logs --egress sb-a lacks %s:\n%s", want, out)
		}
	}
}

// probeResponse is one request's outcome in egressProbe's output.
type probeResponse struct {
	Status int
	Body   string
	Error  string
}

func (r probeResponse) expect(t *testing.T, what string, status int, body string) {
	t.Helper()
	if r.Status != status || !strings.Contains(r.Body, body) {
		t.Errorf("%s: status %d body %q error %q; want %d with %q", what, r.Status, r.Body, r.Error, status, body)
	}
}

// fixProbeKeys maps egressProbe's keys to the Go field names encoding/json matches (it folds
// case, not dashes).
func fixProbeKeys(b []byte) []byte {
	return []byte(strings.NewReplacer(`"allowed-tls"`, `"allowedTLS"`, `"denied-tls"`, `"deniedTLS"`, `"raw-ip"`, `"rawIP"`).Replace(string(b)))
}

// checkNoTrace searches sb-a's environments and files for the credential's prefix.
func checkNoTrace(t *testing.T, ns, tok, secret string) {
	t.Helper()
	prefix := secret[:len("kbxsecret-")]
	res, err := runThroughRouter(ns, "sb-a", tok, "python3", "-c", traceSearch, prefix[:4], prefix[4:])
	if err != nil {
		t.Fatalf("search sb-a for the credential: %v", err)
	}
	out := string(res.GetStdout())
	if !strings.HasPrefix(out, "searched ") || strings.HasPrefix(out, "searched 0 ") {
		t.Fatalf("the search did not run: %q %q", out, res.GetStderr())
	}
	if strings.Contains(out, "FOUND") {
		t.Errorf("the credential is visible inside the sandbox:\n%s", out)
	}
	t.Logf("credential search in sb-a: %s", strings.TrimSpace(out))
}

// checkAudit reads kubox-egress's log on the node and checks the verdict of each destination
// (host:port) the sandbox tried; it waits briefly, as a tunnel's line is written when it closes.
func checkAudit(t *testing.T, sandbox string, want map[string]string) {
	t.Helper()
	log := devenv.NewLayout(stateDir).LogFile(devenv.Egress)
	var seen map[string]string
	waitFor(t, "the audit lines of "+sandbox+" in "+log, func(context.Context) (bool, error) {
		seen = auditVerdicts(t, log, sandbox)
		for dest, verdict := range want {
			if seen[dest] != verdict {
				return false, fmt.Errorf("%s: %q, want %q (all: %v)", dest, seen[dest], verdict, seen)
			}
		}
		return true, nil
	})
	t.Logf("audit verdicts of %s: %v", sandbox, seen)
}

func auditVerdicts(t *testing.T, path, sandbox string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	seen := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg, Sandbox, Domain, Verdict string
			Port                          int
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "Egress" && l.Sandbox == sandbox {
			seen[net.JoinHostPort(l.Domain, strconv.Itoa(l.Port))] = l.Verdict
		}
	}
	return seen
}

// addEgressHosts points names at ip in the environment's egress hosts file (kubox-egress reads it
// again on change) until the test ends.
func addEgressHosts(t *testing.T, ip string, names ...string) {
	t.Helper()
	path := devenv.NewLayout(stateDir).EgressHosts
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the environment's egress hosts file: %v", err)
	}
	line := ip + " " + strings.Join(names, " ") + "\n"
	if err := os.WriteFile(path, append(before, line...), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(path, before, 0o600) })
}

// testInternet is a network namespace the test creates, joined to the host by a veth pair: its
// address stands for the servers of the test's domains, so no traffic leaves the machine.
type testInternet struct {
	ns, ip string
}

func newTestInternet(t *testing.T) *testInternet {
	t.Helper()
	id := krand.String(5)
	n := &testInternet{ns: "kbxe2e-" + id}
	// A /30 in 203.0.113.0/24 (TEST-NET-3, RFC 5737): an address of the public kind, which
	// kubox-egress lets an allowed name reach (198.18.0.0/15, the benchmarking range, is one of
	// its blocked ranges), reached only in this namespace.
	subnet := 4 * int(time.Now().UnixNano()%63)
	hostIP, nsIP := fmt.Sprintf("203.0.113.%d", subnet+1), fmt.Sprintf("203.0.113.%d", subnet+2)
	n.ip = nsIP
	host, peer := "kbx"+id+"h", "kbx"+id+"n"
	ip(t, "netns", "add", n.ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.ns).Run() })
	ip(t, "link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	ip(t, "link", "set", peer, "netns", n.ns)
	ip(t, "addr", "add", hostIP+"/30", "dev", host)
	ip(t, "link", "set", host, "up")
	ip(t, "-n", n.ns, "addr", "add", nsIP+"/30", "dev", peer)
	ip(t, "-n", n.ns, "link", "set", peer, "up")
	ip(t, "-n", n.ns, "link", "set", "lo", "up")
	return n
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// listen opens a TCP listener on port inside the namespace: the socket keeps the namespace it
// was made in, whatever thread later accepts on it.
func (n *testInternet) listen(t *testing.T, port int) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = self.Close() }()
	target, err := os.Open(filepath.Join("/run/netns", n.ns))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = target.Close() }()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatalf("enter network namespace %s: %v", n.ns, err)
	}
	ln, lerr := net.Listen("tcp", net.JoinHostPort(n.ip, strconv.Itoa(port)))
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, so it ends with this goroutine instead of serving others.
		t.Fatalf("return to the host's network namespace: %v", err)
	}
	runtime.UnlockOSThread()
	if lerr != nil {
		t.Fatal(lerr)
	}
	return ln
}

// testServers answers every name on port 80 and, with a certificate from the environment's
// egress test CA, on 443: "hello NAME over SCHEME", and for api.test "authorized" when the
// Authorization header is wantAuth (", with the claim's key" when x-api-key is wantKey too). It
// never echoes a header back.
type testServers struct {
	wantAuth, wantKey string
	mu                sync.Mutex
	auth              map[string][]string // host -> Authorization and x-api-key headers received
}

func (n *testInternet) serve(t *testing.T, names ...string) *testServers {
	t.Helper()
	s := &testServers{auth: map[string][]string{}}
	h := http.HandlerFunc(s.handle)
	plain := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	tlsSrv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{egressTestCert(t, names...)}, MinVersion: tls.VersionTLS12}}
	ln80, ln443 := n.listen(t, 80), n.listen(t, 443)
	go func() { _ = plain.Serve(ln80) }()
	go func() { _ = tlsSrv.ServeTLS(ln443, "", "") }()
	t.Cleanup(func() { _ = plain.Close(); _ = tlsSrv.Close() })
	return s
}

func (s *testServers) handle(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	s.mu.Lock()
	s.auth[host] = append(s.auth[host], r.Header.Get("Authorization"), r.Header.Get("x-api-key"))
	s.mu.Unlock()
	if host == "api.test" {
		if r.Header.Get("Authorization") != s.wantAuth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Header.Get("x-api-key") == s.wantKey {
			_, _ = fmt.Fprintln(w, "authorized, with the claim's key")
			return
		}
		_, _ = fmt.Fprintln(w, "authorized")
		return
	}
	_, _ = fmt.Fprintf(w, "hello %s over %s\n", host, scheme)
}

// checkCredentials: api.test got the template's credential, no other name ever got a credential
// header.
func (s *testServers) checkCredentials(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.auth["api.test"]; len(got) == 0 || got[0] != s.wantAuth {
		t.Errorf("api.test received Authorization %q, want the injected credential", got)
	}
	for host, got := range s.auth {
		for _, a := range got {
			if host != "api.test" && a != "" {
				t.Errorf("%s received a credential header (%d bytes); credentials go to api.test only", host, len(a))
			}
		}
	}
}

// egressTestCert issues a serving certificate for names from the environment's egress test CA,
// which the local node's kubox-egress trusts for the servers of credential domains.
func egressTestCert(t *testing.T, names ...string) tls.Certificate {
	t.Helper()
	pki := devenv.NewLayout(stateDir).PKI
	ca, err := tls.LoadX509KeyPair(filepath.Join(pki, devenv.EgressTestCA+".crt"), filepath.Join(pki, devenv.EgressTestCA+".key"))
	if err != nil {
		t.Fatalf("the environment's egress test CA: %v", err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := servingCert(t, caCert, ca.PrivateKey.(crypto.Signer), names...)
	return cert
}
