package router

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
)

// pathPrefix is the --path-routing-prefix of these tests.
const pathPrefix = "/browse"

// contentHost is their --path-routing-host: the router's address, 127.0.0.1, serves path routes;
// dashboardHost, the same listener by another name, serves the dashboard and the other routes.
const (
	contentHost   = "127.0.0.1"
	dashboardHost = "localhost"
)

// pathSetup is a router with path routing, a sandbox with a real kubox-agent and an app, and a
// second sandbox with the same app.
type pathSetup struct {
	rt    *testRouter
	agent *agentSandbox
	app   *recordingServer
	// web and other are the bases of the app's port of the two sandboxes.
	web, other string
}

func newPathSetup(t *testing.T) *pathSetup {
	t.Helper()
	ns := env.NewNamespace(t)
	s := &pathSetup{rt: startRouter(t, ns, func(c *router.Config) {
		withSharedToken(c)
		c.PathRoutingPrefix, c.PathRoutingRewriteResponses = pathPrefix, true
		c.PathRoutingHost = contentHost
	})}
	s.agent = startAgentSandbox(t, ns, "web")
	markReady(t, createSandbox(t, ns, "other", nil), "127.0.0.1")
	s.app = startRecordingServer(t)
	s.web = fmt.Sprintf("%s/%s/web/%d", pathPrefix, ns, s.app.port())
	s.other = fmt.Sprintf("%s/%s/other/%d", pathPrefix, ns, s.app.port())
	eventuallyStatus(t, http.StatusOK, http.MethodGet, s.rt.url+s.other+"/", "", bearer(sharedToken))
	return s
}

// ticket mints a ticket for sandbox name with the credentials in headers; it returns the URL the
// browser opens.
func (s *pathSetup) ticket(t *testing.T, name, next string, headers ...string) string {
	t.Helper()
	res := do(t, http.MethodPost, s.rt.url+pathPrefix+"/"+s.rt.ns+"/"+name+"/kubox-session?next="+url.QueryEscape(next), "", headers...)
	var out struct{ Ticket, URL string }
	if res.code != http.StatusOK || json.Unmarshal([]byte(res.body), &out) != nil || out.URL == "" {
		t.Fatalf("minting a ticket for %s: %s; want 200 with a url", name, res)
	}
	if strings.Contains(out.URL, sharedToken) {
		t.Fatalf("the ticket URL %q holds the client's credential", out.URL)
	}
	return out.URL
}

// browser is a client with a cookie jar that does not follow redirects.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// browse sends GET u from browser c with headers ("Name: value").
func browse(t *testing.T, c *http.Client, u string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(k, strings.TrimSpace(v))
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return response{code: res.StatusCode, body: string(b), hdr: res.Header}
}

// sessionCookie opens a session for the app's port of sandbox web in a fresh browser, checks the
// redemption, and returns the browser and the cookie's value.
func (s *pathSetup) sessionCookie(t *testing.T) (*http.Client, string) {
	t.Helper()
	b := browser(t)
	ticketURL := s.ticket(t, "web", fmt.Sprintf("%d/index.html?x=1", s.app.port()), bearer(sharedToken))
	res := browse(t, b, s.rt.url+ticketURL, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document")
	if res.code != http.StatusSeeOther || res.hdr.Get("Location") != s.web+"/index.html?x=1" {
		t.Fatalf("redeeming the ticket: %s %v; want 303 to %s/index.html?x=1", res, res.hdr, s.web)
	}
	var session *http.Cookie
	for _, c := range (&http.Response{Header: res.hdr}).Cookies() {
		if c.Name == "kubox-token" {
			session = c
		}
	}
	if session == nil || session.Path != pathPrefix+"/"+s.rt.ns+"/web/" || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
		t.Fatalf("the session cookie is %+v; want kubox-token, Path=%s/%s/web/, HttpOnly, SameSite=Lax", session, pathPrefix, s.rt.ns)
	}
	if again := browse(t, browser(t), s.rt.url+ticketURL); again.code != http.StatusUnauthorized {
		t.Errorf("the ticket was redeemed a second time: %s; want 401", again)
	}
	return b, session.Value
}

// TestPathRoutePageAndWebSocket: a browser opens a session, loads a page and opens a WebSocket
// under the prefix; both reach the sandbox's app port, with no credential of the router's.
func TestPathRoutePageAndWebSocket(t *testing.T) {
	s := newPathSetup(t)
	b, session := s.sessionCookie(t)

	res := browse(t, b, s.rt.url+s.web+"/index.html?x=1", "Cookie: theme=dark", "Sec-Fetch-Site: none")
	if res.code != http.StatusOK || res.body != "app GET /index.html?x=1" {
		t.Fatalf("the page: %s; want the app's answer", res)
	}
	got := s.app.lastRequest(t)
	if a, c := got.Header.Get("Authorization"), got.Header.Get("Cookie"); a != "" || strings.Contains(c, "kubox-token") {
		t.Errorf("the app got Authorization %q and Cookie %q; want neither the agent token nor the session", a, c)
	}
	if res := browse(t, b, s.rt.url+s.web+"/files/a%2Fb"); res.body != "app GET /files/a%2Fb" {
		t.Errorf("an escaped slash: %s; want it forwarded escaped", res)
	}
	if res := browse(t, browser(t), s.rt.url+s.web+"/index.html"); res.code != http.StatusUnauthorized {
		t.Errorf("no cookie: %s; want 401", res)
	}
	if res := do(t, http.MethodGet, s.rt.url+s.web+"/", "", "Cookie: kubox-token="+sharedToken); res.code != http.StatusUnauthorized ||
		!strings.Contains(res.errorMessage(), "browser session") {
		t.Errorf("a raw token in the cookie: %s; want 401 (the cookie holds only sessions)", res)
	}

	wsPort, auths := startWebSocketEcho(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.rt.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	origin := s.rt.url
	fmt.Fprintf(conn, "GET %s/%s/web/%d/socket HTTP/1.1\r\nHost: %s\r\nCookie: kubox-token=%s\r\nOrigin: %s\r\n"+
		"Sec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: websocket\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		pathPrefix, s.rt.ns, wsPort, strings.TrimPrefix(s.rt.url, "http://"), session, origin)
	br := bufio.NewReader(conn)
	hs, err := http.ReadResponse(br, nil)
	if err != nil || hs.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the WebSocket handshake under the prefix: %v %v; want 101", hs, err)
	}
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	echo := make([]byte, 4)
	if _, err := io.ReadFull(br, echo); err != nil || string(echo) != "ping" {
		t.Fatalf("echo %q, %v", echo, err)
	}
	if a := <-auths; a != "" {
		t.Errorf("the WebSocket server got Authorization %q; a browser's route gets no token", a)
	}
}

// TestPathRouteSessionStaysWithItsSandbox: the cookie's path keeps it from another sandbox's
// requests, and sent there anyway it opens nothing.
func TestPathRouteSessionStaysWithItsSandbox(t *testing.T) {
	s := newPathSetup(t)
	b, session := s.sessionCookie(t)
	if res := browse(t, b, s.rt.url+s.web+"/"); res.code != http.StatusOK {
		t.Fatalf("the session's own sandbox: %s", res)
	}
	u, _ := url.Parse(s.rt.url + s.other + "/")
	for _, c := range b.Jar.Cookies(u) {
		if c.Name == "kubox-token" {
			t.Errorf("the browser would send web's session to %s", s.other)
		}
	}
	if res := browse(t, b, s.rt.url+s.other+"/"); res.code != http.StatusUnauthorized {
		t.Errorf("another sandbox with the browser's cookies: %s; want 401", res)
	}
	if res := do(t, http.MethodGet, s.rt.url+s.other+"/", "", "Cookie: kubox-token="+session); res.code != http.StatusForbidden {
		t.Errorf("web's session sent to another sandbox: %s; want 403", res)
	}
	if res := do(t, http.MethodPost, s.rt.url+pathPrefix+"/"+s.rt.ns+"/web/kubox-session", "", bearer(session)); res.code != http.StatusForbidden {
		t.Errorf("a session minted a ticket: %s; want 403", res)
	}
}

// TestPathRouteMintNeedsRBAC: a Kubernetes identity mints tickets only for sandboxes it may
// connect to.
func TestPathRouteMintNeedsRBAC(t *testing.T) {
	s := newPathSetup(t)
	tok := serviceAccountToken(t, s.rt.ns, "alice")
	grantConnect(t, s.rt.ns, "alice", sandboxesGroup, "sandboxes", "web")
	s.ticket(t, "web", "", bearer(tok))
	if res := do(t, http.MethodPost, s.rt.url+pathPrefix+"/"+s.rt.ns+"/other/kubox-session", "", bearer(tok)); res.code != http.StatusForbidden {
		t.Errorf("a ticket for a sandbox alice may not connect to: %s; want 403", res)
	}
	if res := do(t, http.MethodPost, s.rt.url+pathPrefix+"/"+s.rt.ns+"/web/kubox-session", ""); res.code != http.StatusUnauthorized {
		t.Errorf("a ticket without credentials: %s; want 401", res)
	}
}

// TestPathRouteRefusesAgentPorts: the agent's ports are not served on path routes, whatever the
// credentials, so no page can run a command with the agent token the router would add.
func TestPathRouteRefusesAgentPorts(t *testing.T) {
	s := newPathSetup(t)
	_, session := s.sessionCookie(t)
	marker := s.agent.dir + "/pwned"
	base := fmt.Sprintf("%s/%s/web/%d", pathPrefix, s.rt.ns, s.agent.compatPort)
	for _, cred := range []string{"Cookie: kubox-token=" + session, bearer(sharedToken)} {
		res := do(t, http.MethodPost, s.rt.url+base+"/execute", `{"command": "touch `+marker+`"}`, cred, "Content-Type: application/json")
		if res.code != http.StatusForbidden || !strings.Contains(res.errorMessage(), "path routes never serve") {
			t.Errorf("POST /execute on the compatibility port by path: %s; want 403", res)
		}
	}
	if res := do(t, http.MethodGet, s.rt.url+fmt.Sprintf("%s/%s/web/%d/files%s", pathPrefix, s.rt.ns, s.agent.apiPort, s.agent.dir), "",
		bearer(sharedToken)); res.code != http.StatusForbidden {
		t.Errorf("the agent's API port by path: %s; want 403", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command sent by path ran (%s exists)", marker)
	}
}

// TestPathRouteCookieRefusesCrossSite: another site's page cannot use the session cookie; the
// sandbox's own page can.
func TestPathRouteCookieRefusesCrossSite(t *testing.T) {
	s := newPathSetup(t)
	_, session := s.sessionCookie(t)
	cookie := "Cookie: kubox-token=" + session
	for _, tc := range []struct {
		name    string
		method  string
		headers []string
		want    int
	}{
		{"POST from another site", http.MethodPost, []string{cookie, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: cors"}, http.StatusForbidden},
		{"POST with Origin null", http.MethodPost, []string{cookie, "Origin: null"}, http.StatusForbidden},
		{"WebSocket from another site", http.MethodGet, []string{cookie, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: websocket"}, http.StatusForbidden},
		{"iframe from another site", http.MethodGet, []string{cookie, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: iframe"}, http.StatusForbidden},
		{"POST from the sandbox's page", http.MethodPost, []string{cookie, "Origin: " + s.rt.url, "Sec-Fetch-Site: same-origin"}, http.StatusOK},
		{"link from another site", http.MethodGet, []string{cookie, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, tc.method, s.rt.url+s.web+"/api/delete-everything", "x", tc.headers...)
			if res.code != tc.want {
				t.Errorf("%s: %s; want %d", tc.name, res, tc.want)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(res.errorMessage(), "cross-site request forgery") {
				t.Errorf("%s: %s; want a message naming cross-site request forgery", tc.name, res)
			}
		})
	}
}

// TestPathRouteRewritesResponses: with --path-routing-rewrite-responses a redirect to the app's
// root stays under the prefix, and the app's cookies are confined to its port's path.
func TestPathRouteRewritesResponses(t *testing.T) {
	s := newPathSetup(t)
	port := startHostileServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "1", Path: "/"})
		w.Header().Set("Service-Worker-Allowed", "/")
		http.Redirect(w, r, "/login", http.StatusFound)
	})
	base := fmt.Sprintf("%s/%s/other/%d", pathPrefix, s.rt.ns, port)
	res := browse(t, browser(t), s.rt.url+base+"/", bearer(sharedToken))
	if res.code != http.StatusFound || res.hdr.Get("Location") != base+"/login" {
		t.Errorf("the app's redirect to /login: %d Location %q; want %s/login", res.code, res.hdr.Get("Location"), base)
	}
	if c := res.hdr.Get("Set-Cookie"); !strings.Contains(c, "Path="+base+"/") {
		t.Errorf("the app's cookie for / came back as %q; want it confined to Path=%s/", c, base)
	}
	if sw := res.hdr.Get("Service-Worker-Allowed"); sw != base+"/" {
		t.Errorf("Service-Worker-Allowed %q; want %s/", sw, base)
	}
}

// TestPathRouteSessionEndsWithItsSandbox: a session opens the sandbox it was opened for, by UID;
// another Sandbox created under the name later is closed to it.
func TestPathRouteSessionEndsWithItsSandbox(t *testing.T) {
	s := newPathSetup(t)
	b := browser(t)
	res := browse(t, b, s.rt.url+s.ticket(t, "other", fmt.Sprintf("%d/", s.app.port()), bearer(sharedToken)))
	if res.code != http.StatusSeeOther {
		t.Fatalf("redeeming the ticket: %s", res)
	}
	if res := browse(t, b, s.rt.url+s.other+"/"); res.code != http.StatusOK {
		t.Fatalf("the session's sandbox: %s", res)
	}
	old := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: s.rt.ns, Name: "other"}}
	env.ForceDelete(t, old)
	env.WaitGone(t, old)
	eventuallyStatus(t, http.StatusNotFound, http.MethodGet, s.rt.url+s.other+"/", "", bearer(sharedToken))
	markReady(t, createSandbox(t, s.rt.ns, "other", nil), "127.0.0.1")
	eventuallyStatus(t, http.StatusOK, http.MethodGet, s.rt.url+s.other+"/", "", bearer(sharedToken))
	if res := browse(t, b, s.rt.url+s.other+"/"); res.code != http.StatusUnauthorized || !strings.Contains(res.errorMessage(), "no longer exists") {
		t.Errorf("the old session on the new Sandbox of the name: %s; want 401", res)
	}
}

// TestPathRouteTicketErrors: a ticket opens only its own sandbox's session, and the session
// endpoint says what it wants.
func TestPathRouteTicketErrors(t *testing.T) {
	s := newPathSetup(t)
	session := pathPrefix + "/" + s.rt.ns + "/other/kubox-session"
	ticketURL := s.ticket(t, "web", "", bearer(sharedToken))
	ticket, _ := url.Parse(ticketURL)
	for _, tc := range []struct {
		name, method, target string
		want                 int
	}{
		{"web's ticket at other's endpoint", http.MethodGet, session + "?" + ticket.RawQuery, http.StatusForbidden},
		{"no ticket", http.MethodGet, session, http.StatusUnauthorized},
		{"a forged ticket", http.MethodGet, session + "?ticket=kbs1.e30.AAAA", http.StatusUnauthorized},
		{"next leaving the sandbox", http.MethodGet, session + "?" + ticket.RawQuery + "&next=80/../../web/80/", http.StatusBadRequest},
		{"next naming no port", http.MethodPost, session + "?next=//evil.example/", http.StatusBadRequest},
		{"PUT", http.MethodPut, session, http.StatusMethodNotAllowed},
		{"HEAD does not spend a ticket", http.MethodHead, ticketURL, http.StatusMethodNotAllowed},
	} {
		if res := do(t, tc.method, s.rt.url+tc.target, "", bearer(sharedToken)); res.code != tc.want {
			t.Errorf("%s: %s; want %d", tc.name, res, tc.want)
		}
	}
	if res := browse(t, browser(t), s.rt.url+ticketURL); res.code != http.StatusOK || !strings.Contains(res.body, "is open until") {
		t.Errorf("redeeming the ticket without next: %s; want 200 after all the refusals above", res)
	}
}

// TestPathRouteHasAnOriginApartFromTheDashboard: a page a sandbox serves on a path route never
// runs with the dashboard's origin, where its scripts could read the viewer's Kubernetes token
// from sessionStorage. Path routes (pages and the session endpoint) are refused on the
// dashboard's host; the dashboard is refused on the path-routing host; and the dashboard's
// window is its own (Cross-Origin-Opener-Policy), so a sandbox's page that opens it gets no
// handle to it. (Issue #36, hole 7: path routes put sandbox pages on the dashboard's origin.)
func TestPathRouteHasAnOriginApartFromTheDashboard(t *testing.T) {
	s := newPathSetup(t)
	port := strings.TrimPrefix(s.rt.url, "http://"+contentHost)
	onDashboard, onContent := "Host: "+dashboardHost+port, "Host: "+contentHost+port

	if res := do(t, http.MethodGet, s.rt.url+"/ui/", "", onDashboard); res.code != http.StatusOK ||
		res.hdr.Get("Cross-Origin-Opener-Policy") != "same-origin" {
		t.Errorf("the dashboard on %s: %d with Cross-Origin-Opener-Policy %q; want 200 and same-origin", dashboardHost, res.code,
			res.hdr.Get("Cross-Origin-Opener-Policy"))
	}
	for name, c := range map[string]struct {
		method, path, host string
		header             string
	}{
		"a sandbox page on the dashboard's host":         {method: http.MethodGet, path: s.web + "/index.html", host: onDashboard},
		"a ticket minted on the dashboard's host":        {method: http.MethodPost, path: pathPrefix + "/" + s.rt.ns + "/web/kubox-session", host: onDashboard},
		"the dashboard on the path-routing host":         {method: http.MethodGet, path: "/ui/", host: onContent},
		"the dashboard's API on the path-routing host":   {method: http.MethodGet, path: "/ui/api/whoami", host: onContent},
		"the agent's route on the path-routing host":     {method: http.MethodGet, path: "/sandboxes/" + s.rt.ns + "/web/", host: onContent},
		"minting a claim token on the path-routing host": {method: http.MethodPost, path: "/v1/claims/" + s.rt.ns + "/web/token", host: onContent},
		"a header route on the path-routing host":        {method: http.MethodGet, path: "/", host: onContent, header: "X-Sandbox-ID: web"},
	} {
		t.Run(name, func(t *testing.T) {
			headers := []string{c.host, bearer(sharedToken)}
			if c.header != "" {
				headers = append(headers, c.header)
			}
			res := do(t, c.method, s.rt.url+c.path, "", headers...)
			if res.code != http.StatusForbidden || strings.HasPrefix(res.body, "app ") || strings.Contains(res.body, "<html") ||
				!strings.Contains(res.errorMessage(), "--path-routing-host") {
				t.Errorf("%s %s (%s): %s; want 403 naming --path-routing-host, and no page", c.method, c.path, c.host, clipBody(res))
			}
		})
	}
	if res := do(t, http.MethodGet, s.rt.url+s.web+"/index.html", "", onContent, bearer(sharedToken)); res.code != http.StatusOK ||
		res.body != "app GET /index.html" {
		t.Errorf("the sandbox page on the path-routing host: %s; want the app's answer", res)
	}
	if res := do(t, http.MethodGet, s.rt.url+"/healthz", "", onContent); res.code != http.StatusOK {
		t.Errorf("/healthz on the path-routing host: %s; want 200 (load balancers probe every host)", res)
	}
}

// clipBody shows a response with at most 300 bytes of its body.
func clipBody(r response) string {
	if len(r.body) > 300 {
		r.body = r.body[:300] + "..."
	}
	return r.String()
}
