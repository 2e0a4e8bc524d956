package router

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
)

// startHostileServer serves handler on 127.0.0.1, over HTTP/1.1 and h2c.
func startHostileServer(t *testing.T, handler http.HandlerFunc) int {
	t.Helper()
	s := httptest.NewUnstartedServer(handler)
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetHTTP1(true)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Start()
	t.Cleanup(s.Close)
	return serverPort(s)
}

// TestHugeResponseHeadersAreRefused is the attack of issue #2: a sandbox's server answers a few
// dozen parallel requests with multi-megabyte response headers. Each must end in a 502 naming
// the sandbox and the limit, over HTTP/1.1 and h2c, instead of the router holding the headers.
func TestHugeResponseHeadersAreRefused(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	big := strings.Repeat("h", 8<<20)
	port := startHostileServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Big", big)
		_, _ = io.WriteString(w, "you should not see this")
	})
	sb := createSandbox(t, ns, "hostile", &sandboxv1beta1.AgentSpec{Port: ptrInt32(port)})
	markReady(t, sb, "127.0.0.1")
	url := rt.url + "/sandboxes/" + ns + "/hostile/"
	// Once the router's caches show the sandbox Ready and its Pod, the sandbox's answer is a 502.
	eventuallyStatus(t, http.StatusBadGateway, http.MethodGet, url, "", bearer(sharedToken))

	for _, h2c := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2c=%v", h2c), func(t *testing.T) {
			// The client refuses headers over 1 MiB itself, so the test process stays small.
			c := smallHeaderClient(h2c)
			var wg sync.WaitGroup
			for i := range 24 {
				wg.Go(func() {
					res, err := c.Get(url)
					if err != nil {
						t.Errorf("request %d: %v; want a 502 from the router", i, err)
						return
					}
					defer func() { _ = res.Body.Close() }()
					b, _ := io.ReadAll(res.Body)
					if res.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "--max-response-header-bytes") ||
						!strings.Contains(string(b), ns+"/hostile") || res.Header.Get("X-Big") != "" {
						t.Errorf("request %d: %d %.200s (X-Big: %d bytes); want 502 naming the sandbox and --max-response-header-bytes",
							i, res.StatusCode, b, len(res.Header.Get("X-Big")))
					}
				})
			}
			wg.Wait()
		})
	}
	if n := counter(t, rt, "sandbox_router_upstream_errors_total", `reason="header_too_large"`); n < 48 {
		t.Errorf("sandbox_router_upstream_errors_total{reason=header_too_large} = %v, want 48", n)
	}
}

// smallHeaderClient is httpClient with the shared token, refusing response headers over 1 MiB.
func smallHeaderClient(h2c bool) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols), MaxResponseHeaderBytes: 1 << 20}
	if h2c {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	return &http.Client{Transport: &contract.BearerTransport{Token: sharedToken, Base: tr}}
}

// previewSetup is a router with preview hosts and a sandbox with a kubox-agent, plus an app.
type previewSetup struct {
	rt    *testRouter
	agent *agentSandbox
	app   *recordingServer
	// appHost is the preview host of the app's port of the agent's sandbox.
	appHost string
}

const previewDomain = "preview.test"

func newPreviewSetup(t *testing.T) *previewSetup {
	t.Helper()
	ns := env.NewNamespace(t)
	s := &previewSetup{rt: startRouter(t, ns, func(c *router.Config) { withSharedToken(c); c.PreviewDomain = previewDomain })}
	s.agent = startAgentSandbox(t, ns, "victim")
	s.app = startRecordingServer(t)
	s.appHost = s.host(s.app.port())
	eventuallyStatus(t, http.StatusOK, http.MethodGet, s.rt.url+"/", "", "Host: "+s.appHost, bearer(sharedToken))
	return s
}

func (s *previewSetup) host(port int) string {
	return contract.PreviewHost(port, contract.PreviewID(s.agent.sb.UID), previewDomain) + ":8080"
}

// TestPreviewHostRefusesAgentPorts is the first attack of issue #6: a page POSTs /execute to the
// compatibility port (or calls the agent's API) through a preview host with the cookie, and the
// router adds the sandbox's agent token.
func TestPreviewHostRefusesAgentPorts(t *testing.T) {
	s := newPreviewSetup(t)
	marker := s.agent.dir + "/pwned"
	for _, tc := range []struct {
		name       string
		port       int
		path, body string
	}{
		{"compatibility port /execute", s.agent.compatPort, "/execute", `{"command": "touch ` + marker + `"}`},
		{"agent port files", s.agent.apiPort, "/files" + s.agent.dir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodGet
			if tc.body != "" {
				method = http.MethodPost
			}
			res := do(t, method, s.rt.url+tc.path, tc.body, "Host: "+s.host(tc.port), "Cookie: kubox-token="+sharedToken,
				"Content-Type: application/json")
			if res.code != http.StatusForbidden || !strings.Contains(res.errorMessage(), "preview hosts never serve") {
				t.Errorf("%s %s on the preview host of port %d: %s; want 403 saying preview hosts never serve the agent's ports",
					method, tc.path, tc.port, res)
			}
			// The header does not open them either: they are not preview ports at all.
			if res := do(t, method, s.rt.url+tc.path, tc.body, "Host: "+s.host(tc.port), bearer(sharedToken)); res.code != http.StatusForbidden {
				t.Errorf("with Authorization: %s; want 403", res)
			}
		})
	}
	if res := do(t, http.MethodGet, s.rt.url+"/files"+marker, "", "X-Sandbox-ID: victim", "X-Sandbox-Namespace: "+s.rt.ns,
		"X-Sandbox-Port: "+fmt.Sprint(s.agent.apiPort), bearer(sharedToken)); res.code != http.StatusNotFound {
		t.Errorf("the command sent through the preview host ran (%s exists: %s)", marker, res)
	}
}

// TestPreviewCookieRefusesCrossSite is the second attack of issue #6: a page in another sandbox
// (another preview host: same site) or on another site sends a request with the victim's
// kubox-token cookie.
func TestPreviewCookieRefusesCrossSite(t *testing.T) {
	s := newPreviewSetup(t)
	self := "http://" + s.appHost
	other := "http://" + contract.PreviewHost(3000, "abcdefghijkl", previewDomain) + ":8080"
	cookie := "Cookie: kubox-token=" + sharedToken
	for _, tc := range []struct {
		name    string
		method  string
		headers []string
		want    int
	}{
		{"POST from another sandbox's page", http.MethodPost, []string{cookie, "Origin: " + other, "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: cors"}, http.StatusForbidden},
		{"POST with a cross-site Origin, no Sec-Fetch-*", http.MethodPost, []string{cookie, "Origin: https://evil.example"}, http.StatusForbidden},
		{"POST with Origin null", http.MethodPost, []string{cookie, "Origin: null"}, http.StatusForbidden},
		{"fetch GET from another sandbox's page", http.MethodGet, []string{cookie, "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: cors", "Sec-Fetch-Dest: empty", "Origin: " + other}, http.StatusForbidden},
		{"iframe from another site", http.MethodGet, []string{cookie, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: iframe"}, http.StatusForbidden},
		{"WebSocket from another site", http.MethodGet, []string{cookie, "Origin: " + other, "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: websocket"}, http.StatusForbidden},
		{"form POST navigation from another site", http.MethodPost, []string{cookie, "Origin: " + other, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"}, http.StatusForbidden},
		{"POST from the preview's own page", http.MethodPost, []string{cookie, "Origin: " + self, "Sec-Fetch-Site: same-origin"}, http.StatusOK},
		{"POST with its own Origin, no Sec-Fetch-*", http.MethodPost, []string{cookie, "Origin: " + self}, http.StatusOK},
		{"link from another site (top-level GET)", http.MethodGet, []string{cookie, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"}, http.StatusOK},
		{"typed address", http.MethodGet, []string{cookie, "Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"}, http.StatusOK},
		{"curl --cookie POST (no browser headers)", http.MethodPost, []string{cookie}, http.StatusOK},
		{"Authorization header from another site", http.MethodPost, []string{bearer(sharedToken), "Origin: " + other, "Sec-Fetch-Site: same-site"}, http.StatusOK},
		{"two kubox-token cookies", http.MethodGet, []string{cookie + "; kubox-token=planted"}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.app.mu.Lock()
			s.app.last = nil
			s.app.mu.Unlock()
			res := do(t, tc.method, s.rt.url+"/api/delete-everything", "x", append([]string{"Host: " + s.appHost}, tc.headers...)...)
			if res.code != tc.want {
				t.Errorf("%s: %s; want %d", tc.name, res, tc.want)
			}
			s.app.mu.Lock()
			reached := s.app.last != nil
			s.app.mu.Unlock()
			if reached != (tc.want == http.StatusOK) {
				t.Errorf("%s: the app received the request: %v; want %v", tc.name, reached, tc.want == http.StatusOK)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(res.errorMessage(), "cross-site request forgery") {
				t.Errorf("%s: %s; want a message naming cross-site request forgery", tc.name, res)
			}
		})
	}
}

// tokenSetCookies are Set-Cookie headers with which a sandbox tries to set or replace the
// router's cookie: for its own host, for the whole preview domain, in other casings, with the
// prefixes browsers know.
var tokenSetCookies = []string{
	"kubox-token=planted; Path=/",
	"kubox-token=planted; Domain=" + previewDomain + "; Path=/",
	"KUBOX-TOKEN=planted",
	"Kubox-Token =planted",
	"__Host-kubox-token=planted; Secure; Path=/",
	"__Secure-kubox-token=planted; Secure",
	" kubox-token=planted",
}

// TestSandboxCannotSetTokenCookie is the third attack of issue #6: the sandbox's responses (final,
// and 1xx ones, which the router passes on as they come) carry Set-Cookie for kubox-token.
func TestSandboxCannotSetTokenCookie(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, func(c *router.Config) { withSharedToken(c); c.PreviewDomain = previewDomain })
	port := startHostileServer(t, func(w http.ResponseWriter, _ *http.Request) {
		for _, c := range tokenSetCookies {
			w.Header().Add("Set-Cookie", c)
		}
		w.Header().Add("Set-Cookie", "theme=dark")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Set-Cookie")
		for _, c := range tokenSetCookies {
			w.Header().Add("Set-Cookie", c)
		}
		w.Header().Add("Set-Cookie", "session=1; HttpOnly")
		w.Header().Add("Set-Cookie2", "kubox-token=planted")
		_, _ = io.WriteString(w, "ok")
	})
	sb := createSandbox(t, ns, "web", nil)
	markReady(t, sb, "127.0.0.1")
	host := contract.PreviewHost(port, contract.PreviewID(sb.UID), previewDomain) + ":8080"
	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/", "", "Host: "+host, bearer(sharedToken))

	for _, route := range []struct{ name, url, host string }{
		{"preview host", rt.url + "/", host},
		{"path route", rt.url + "/sandboxes/" + ns + "/web/", ""},
	} {
		t.Run(route.name, func(t *testing.T) {
			var early []string
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				Got1xxResponse: func(_ int, h textproto.MIMEHeader) error {
					early = append(early, h.Values("Set-Cookie")...)
					return nil
				},
			})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, route.url, nil)
			req.Host = route.host
			req.Header.Set("X-Sandbox-Port", fmt.Sprint(port))
			res, err := httpClient(false, sharedToken).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if got, want := res.Header.Values("Set-Cookie"), []string{"session=1; HttpOnly"}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("final response: Set-Cookie %q; want only %q", got, want)
			}
			if got := res.Header.Values("Set-Cookie2"); len(got) > 0 {
				t.Errorf("final response: Set-Cookie2 %q; want none", got)
			}
			if want := []string{"theme=dark"}; fmt.Sprint(early) != fmt.Sprint(want) {
				t.Errorf("103 response: Set-Cookie %q; want only %q", early, want)
			}
		})
	}
}
