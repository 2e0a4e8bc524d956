package router

import (
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
				if herr == nil || herr.Code != http.StatusBadRequest || !strings.Contains(herr.Msg, tc.msg) ||
					!strings.Contains(herr.Msg, "/browse/{namespace}/{name}/{port}/{path}") {
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
			if herr != nil && (herr.Code != http.StatusForbidden || !strings.Contains(herr.Msg, "--path-routing-host")) {
				t.Errorf("refusal %d %q; want 403 naming --path-routing-host", herr.Code, herr.Msg)
			}
		})
	}
	off := &Router{cfg: Config{}}
	if herr := off.checkPathRoutingOrigin(httptest.NewRequest(http.MethodGet, "/ui/", nil), nil); herr != nil {
		t.Errorf("without path routing the dashboard was refused: %v", herr)
	}
}

func TestPathRoutingRewriteNeedsPrefix(t *testing.T) {
	c := DefaultConfig()
	c.AgentTokenKey = make([]byte, 32)
	c.PathRoutingRewriteResponses = true
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "needs --path-routing-prefix") {
		t.Errorf("rewriting without a prefix: %v; want an error", err)
	}
}
