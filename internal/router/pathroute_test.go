package router

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParsePrefixRoute(t *testing.T) {
	rt := &Router{cfg: Config{ProxyTimeout: time.Minute, PathRoutingPrefix: "/browse"}}
	const base = "/browse/team/web/3000"
	cases := map[string]struct {
		target  string
		headers map[string]string
		want    *route
		// msg is in the 400's message.
		msg string
	}{
		"page": {target: "/browse/team/web/3000/index.html?x=1",
			want: &route{kind: kindPath, namespace: "team", name: "web", port: 3000, path: "/index.html", base: base}},
		"escaped slash kept": {target: "/browse/team/web/3000/files/a%2Fb",
			want: &route{kind: kindPath, namespace: "team", name: "web", port: 3000, path: "/files/a/b", rawPath: "/files/a%2Fb", base: base}},
		"escaped segments decoded": {target: "/browse/t%65am/w%65b/3%30%300/",
			want: &route{kind: kindPath, namespace: "team", name: "web", port: 3000, path: "/", base: base}},
		"no rest": {target: "/browse/team/web/3000",
			want: &route{kind: kindPath, namespace: "team", name: "web", port: 3000, path: "/", base: base}},
		"before the header": {target: "/browse/team/web/3000/ws", headers: map[string]string{"X-Sandbox-ID": "other", "X-Sandbox-Port": "9"},
			want: &route{kind: kindPath, namespace: "team", name: "web", port: 3000, path: "/ws", base: base}},
		"session endpoint": {target: "/browse/team/web/kubox-session?ticket=x",
			want: &route{kind: kindPathSession, namespace: "team", name: "web", base: "/browse/team/web"}},
		"not the prefix":    {target: "/browsers/team/web/3000/"},
		"prefix alone":      {target: "/browse"},
		"sandboxes still":   {target: "/sandboxes/ns/box/x", want: &route{kind: kindSandbox, namespace: "ns", name: "box", path: "/x"}},
		"too few segments":  {target: "/browse/team/web", msg: "/browse/{namespace}/{name}/{port}/{path}"},
		"empty segment":     {target: "/browse/team//3000/", msg: "too few segments"},
		"bad namespace":     {target: "/browse/Team/web/3000/", msg: `"Team" is not a namespace name`},
		"escaped slash ns":  {target: "/browse/te%2Fam/web/3000/", msg: "is not a namespace name"},
		"bad name":          {target: "/browse/team/-web/3000/", msg: "is not a sandbox name"},
		"port zero":         {target: "/browse/team/web/0/", msg: `"0" is not a port`},
		"port too big":      {target: "/browse/team/web/65536/", msg: "is not a port"},
		"port with sign":    {target: "/browse/team/web/+80/", msg: "is not a port"},
		"port word":         {target: "/browse/team/web/http/", msg: "is not a port"},
		"session with rest": {target: "/browse/team/web/kubox-session/x", msg: "is not a port"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.target, nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			got, herr := rt.parseProxyRoute(r)
			if tc.msg != "" {
				if herr == nil || herr.code != http.StatusBadRequest || !strings.Contains(herr.msg, tc.msg) ||
					!strings.Contains(herr.msg, "/browse/{namespace}/{name}/{port}/{path}") {
					t.Fatalf("parseProxyRoute = %+v, %v; want 400 naming the shape and %q", got, herr, tc.msg)
				}
				return
			}
			if herr != nil {
				t.Fatalf("parseProxyRoute: %v", herr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(route{})); diff != "" {
				t.Errorf("route (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePrefixRouteOff(t *testing.T) {
	rt := &Router{cfg: Config{ProxyTimeout: time.Minute}}
	// Without a prefix the path is nobody's: the router's "does not know where" 400 follows.
	if got, herr := rt.parseProxyRoute(httptest.NewRequest(http.MethodGet, "/browse/team/web/3000/", nil)); got != nil || herr != nil {
		t.Fatalf("path routing is off, yet /browse/... was read as %+v, %v", got, herr)
	}
}

func TestValidatePathPrefix(t *testing.T) {
	for p, ok := range map[string]bool{
		"": true, "/browse": true, "/a/b-c_d.e~f": true,
		"browse": false, "/browse/": false, "/": false, "/a//b": false, "/a b": false, "/a?b": false, "/a%2Fb": false,
		"/sandboxes": false, "/claims/x": false, "/v1": false, "/healthz": false, "/ui": false, "/a/../b": false, "/.": false,
	} {
		if err := validatePathPrefix(p); (err == nil) != ok {
			t.Errorf("validatePathPrefix(%q) = %v; want ok=%v", p, err, ok)
		}
	}
	c := DefaultConfig()
	c.AgentTokenKey = make([]byte, 32)
	c.PathRoutingRewriteResponses = true
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "needs --path-routing-prefix") {
		t.Errorf("rewriting without a prefix: %v; want an error", err)
	}
}

func TestRewriteLocation(t *testing.T) {
	const base = "/browse/team/web/3000"
	hosts := []string{"10.0.0.7:3000", "router.example", ""}
	for v, want := range map[string]string{
		"/login?next=%2Fx#top":                   base + "/login?next=%2Fx#top",
		"/":                                      base + "/",
		base + "/already":                        base + "/already",
		base:                                     base,
		"relative/page":                          "relative/page",
		"../up":                                  "../up",
		"//evil.example/x":                       "//evil.example/x",
		"http://10.0.0.7:3000/app?q=1":           base + "/app?q=1",
		"http://10.0.0.7:3000":                   base + "/",
		"http://10.0.0.7:3000?q":                 base + "/?q",
		"https://router.example/app":             "https://router.example" + base + "/app",
		"https://ROUTER.example:443/app":         "https://ROUTER.example:443" + base + "/app",
		"https://router.example" + base + "/ok":  "https://router.example" + base + "/ok",
		"https://elsewhere.example/app":          "https://elsewhere.example/app",
		"https://user@router.example/app":        "https://user@router.example/app",
		"mailto:someone@example.com":             "mailto:someone@example.com",
		"/browse/team/other/3000/x":              base + "/browse/team/other/3000/x",
		"/browse/team/web/30000/not-under-base/": base + "/browse/team/web/30000/not-under-base/",
	} {
		if got := rewriteLocation(v, base, hosts); got != want {
			t.Errorf("rewriteLocation(%q) = %q; want %q", v, got, want)
		}
	}
}

func TestModifyPathResponse(t *testing.T) {
	const base = "/browse/team/web/3000"
	for _, rewrite := range []bool{false, true} {
		rt := &Router{cfg: Config{PathRoutingRewriteResponses: rewrite}}
		pt := &proxyTarget{target: &target{addr: "10.0.0.7:3000"}, path: "/js/sw.js", pathBase: base}
		req := httptest.NewRequest(http.MethodGet, "http://10.0.0.7:3000/js/sw.js", nil)
		req = req.WithContext(context.WithValue(t.Context(), targetKey{}, pt))
		res := &http.Response{Request: req, Header: http.Header{
			"Location":               {"/login"},
			"Content-Location":       {"/js/sw.js"},
			"Set-Cookie":             {"sid=1; Path=/; HttpOnly", "a=2; path=/x/../../..", "b=3", "c=4; Path=" + base + "/mine"},
			"Service-Worker-Allowed": {"/"},
		}}
		rt.modifyPathResponse(res)
		wantLoc, wantCL := "/login", "/js/sw.js"
		if rewrite {
			wantLoc, wantCL = base+"/login", base+"/js/sw.js"
		}
		if got := res.Header.Get("Location"); got != wantLoc {
			t.Errorf("rewrite=%v: Location %q; want %q", rewrite, got, wantLoc)
		}
		if got := res.Header.Get("Content-Location"); got != wantCL {
			t.Errorf("rewrite=%v: Content-Location %q; want %q", rewrite, got, wantCL)
		}
		// Confined whatever the flag: the origin is shared with every other sandbox.
		wantCookies := []string{"sid=1; Path=" + base + "/; HttpOnly", "a=2; Path=" + base + "/", "b=3", "c=4; Path=" + base + "/mine"}
		if diff := cmp.Diff(wantCookies, res.Header.Values("Set-Cookie")); diff != "" {
			t.Errorf("rewrite=%v: Set-Cookie (-want +got):\n%s", rewrite, diff)
		}
		if got := res.Header.Get("Service-Worker-Allowed"); got != base+"/" {
			t.Errorf("rewrite=%v: Service-Worker-Allowed %q; want %q", rewrite, got, base+"/")
		}
	}
}

func TestConfineServiceWorker(t *testing.T) {
	const base = "/browse/team/web/3000"
	for v, want := range map[string]string{
		"/":                      base + "/",
		"/app/":                  base + "/app/",
		"../":                    base + "/",
		"../../../../../":        base + "/",
		"/%2e%2e/%2E%2E/":        base + "/",
		base + "/app/":           base + "/app/",
		"https://router.example": "",
		"//router.example/":      "",
	} {
		h := http.Header{"Service-Worker-Allowed": {v}}
		confineServiceWorker(h, base, "/js/sw.js")
		if got := h.Get("Service-Worker-Allowed"); got != want {
			t.Errorf("Service-Worker-Allowed %q became %q; want %q", v, got, want)
		}
	}
}

func TestCheckNext(t *testing.T) {
	for next, ok := range map[string]bool{
		"": true, "3000": true, "3000/": true, "3000/index.html?x=1#y": true, "8080/a%2Fb": true,
		"0/": false, "65536/": false, "http://evil/": false, "/3000/": false, "3000/../other/": false,
		"3000/%2e%2e/x": false, "3000/a\\b": false, "3000/a\nb": false, "x/": false, "3000/a%2F..%2Fb": true,
	} {
		if herr := checkNext(next); (herr == nil) != ok {
			t.Errorf("checkNext(%q) = %v; want ok=%v", next, herr, ok)
		}
	}
}

func TestGrants(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	now := time.Unix(1_800_000_000, 0)
	g := grant{Use: useTicket, Namespace: "team", Name: "web", UID: "uid-1", Subject: "alice", Expiry: now.Add(time.Minute).Unix(), ID: "id"}
	tok := mintGrant(key, g)
	if got, herr := verifyGrant(key, tok, useTicket, now); herr != nil || got != g {
		t.Fatalf("verifyGrant = %+v, %v; want %+v", got, herr, g)
	}
	payload, sig, _ := strings.Cut(strings.TrimPrefix(tok, grantPrefix), ".")
	for name, tc := range map[string]struct {
		tok, use string
		at       time.Time
		msg      string
	}{
		"a session is not a ticket": {tok, useSession, now, "is a ticket, not a session"},
		"expired":                   {tok, useTicket, now.Add(time.Minute), "has expired"},
		"other key":                 {mintGrant([]byte(strings.Repeat("x", 32)), g), useTicket, now, "signature does not match"},
		"altered":                   {grantPrefix + payload + "x." + sig, useTicket, now, "signature does not match"},
		"claim token":               {"kbx1." + payload + "." + sig, useTicket, now, "malformed"},
		"no signature":              {grantPrefix + payload, useTicket, now, "malformed"},
	} {
		if _, herr := verifyGrant(key, tc.tok, tc.use, tc.at); herr == nil || herr.code != http.StatusUnauthorized || !strings.Contains(herr.msg, tc.msg) {
			t.Errorf("%s: %v; want 401 saying %q", name, herr, tc.msg)
		}
	}
	if herr := g.authorize(access{namespace: "team", name: "other"}); herr == nil || herr.code != http.StatusForbidden {
		t.Errorf("a grant for team/web opened team/other: %v", herr)
	}
	if herr := g.authorize(access{namespace: "team", name: "web", claim: true}); herr == nil {
		t.Error("a grant for sandbox team/web opened claim team/web")
	}
}

func TestTicketLedgerIsOneUse(t *testing.T) {
	var l ticketLedger
	now := time.Unix(1000, 0)
	if !l.redeem("a", 1060, now) || l.redeem("a", 1060, now.Add(time.Second)) {
		t.Fatal("a ticket was redeemed twice (or not at all)")
	}
	if !l.redeem("b", 1060, now) {
		t.Error("another ticket was refused")
	}
	l.redeem("c", 2000, now.Add(2*time.Minute))
	if len(l.used) != 1 {
		t.Errorf("expired tickets are kept: %v", l.used)
	}
}

// TestCheckPathRoutingOrigin: path routes only on the path-routing host, and on it nothing but
// path routes and the health paths, whatever the port and case of the Host.
func TestCheckPathRoutingOrigin(t *testing.T) {
	rt := &Router{cfg: Config{PathRoutingPrefix: "/browse", PathRoutingHost: "sandboxes.example.com"}}
	for name, c := range map[string]struct {
		host, path string
		allowed    bool
	}{
		"a page on the content host":           {host: "sandboxes.example.com", path: "/browse/ns/web/3000/", allowed: true},
		"a page on the content host, port":     {host: "Sandboxes.Example.com.:8443", path: "/browse/ns/web/3000/x", allowed: true},
		"a session on the content host":        {host: "sandboxes.example.com", path: "/browse/ns/web/kubox-session", allowed: true},
		"health on the content host":           {host: "sandboxes.example.com", path: "/healthz", allowed: true},
		"a page on the dashboard's host":       {host: "kubox.example.com", path: "/browse/ns/web/3000/"},
		"a session on the dashboard's host":    {host: "kubox.example.com", path: "/browse/ns/web/kubox-session"},
		"a page on a host under the content's": {host: "a.sandboxes.example.com", path: "/browse/ns/web/3000/"},
		"the dashboard on the content host":    {host: "sandboxes.example.com:443", path: "/ui/"},
		"the agent route on the content host":  {host: "sandboxes.example.com", path: "/sandboxes/ns/web/"},
		"the dashboard elsewhere":              {host: "kubox.example.com", path: "/ui/", allowed: true},
		"the agent route elsewhere":            {host: "kubox.example.com", path: "/sandboxes/ns/web/", allowed: true},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, c.path, nil)
			r.Host = c.host
			rte, herr := rt.parseProxyRoute(r)
			if herr != nil {
				t.Fatalf("parseProxyRoute: %v", herr)
			}
			herr = rt.checkPathRoutingOrigin(r, rte)
			if got := herr == nil; got != c.allowed {
				t.Errorf("%s on %s: allowed %v (%v), want %v", c.path, c.host, got, herr, c.allowed)
			}
			if herr != nil && (herr.code != http.StatusForbidden || !strings.Contains(herr.msg, "--path-routing-host")) {
				t.Errorf("refusal %d %q; want 403 naming --path-routing-host", herr.code, herr.msg)
			}
		})
	}
	off := &Router{cfg: Config{}}
	if herr := off.checkPathRoutingOrigin(httptest.NewRequest(http.MethodGet, "/ui/", nil), nil); herr != nil {
		t.Errorf("without path routing the dashboard was refused: %v", herr)
	}
}
