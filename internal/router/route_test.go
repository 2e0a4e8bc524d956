package router

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/api/contract"
)

func TestParseProxyRoute(t *testing.T) {
	rt := &Router{cfg: Config{ProxyTimeout: time.Minute, PreviewDomain: "preview.test"}}
	id := contract.PreviewID("uid-1")
	cases := map[string]struct {
		target  string
		headers map[string]string
		want    *route
		code    int
	}{
		"sandbox path": {target: "/sandboxes/ns/box/files/a%2Fb?x=1",
			want: &route{kind: kindSandbox, namespace: "ns", name: "box", path: "/files/a/b", rawPath: "/files/a%2Fb"}},
		"sandbox root":   {target: "/sandboxes/ns/box", want: &route{kind: kindSandbox, namespace: "ns", name: "box", path: "/"}},
		"claim path":     {target: "/claims/ns/c/x", want: &route{kind: kindClaim, namespace: "ns", name: "c", path: "/x"}},
		"port header":    {target: "/sandboxes/ns/box/", headers: map[string]string{"X-Sandbox-Port": "3000"}, want: &route{kind: kindSandbox, namespace: "ns", name: "box", port: 3000, path: "/"}},
		"header default": {target: "/execute", headers: map[string]string{"X-Sandbox-ID": "py"}, want: &route{kind: kindHeader, namespace: "default", name: "py", port: 8888, path: "/execute"}},
		"header wins over path": {target: "/sandboxes/ns/box/x", headers: map[string]string{"X-Sandbox-ID": "py", "X-Sandbox-Namespace": "team"},
			want: &route{kind: kindHeader, namespace: "team", name: "py", port: 8888, path: "/sandboxes/ns/box/x"}},
		"timeout":        {target: "/claims/ns/c/", headers: map[string]string{"X-Sandbox-Timeout": "1.5"}, want: &route{kind: kindClaim, namespace: "ns", name: "c", path: "/", timeout: 1500 * time.Millisecond}},
		"timeout capped": {target: "/claims/ns/c/", headers: map[string]string{"X-Sandbox-Timeout": "3600"}, want: &route{kind: kindClaim, namespace: "ns", name: "c", path: "/", timeout: time.Minute}},
		"preview":        {target: "/app", headers: map[string]string{"Host": "3000-" + id + ".preview.test:8080"}, want: &route{kind: kindPreview, previewID: id, port: 3000, path: "/app"}},
		"own path":       {target: "/healthz"},
		"other path":     {target: "/v1/claims/ns/c/token"},
		"no name":        {target: "/sandboxes/ns", code: http.StatusBadRequest},
		"bad name":       {target: "/sandboxes/ns/Box/", code: http.StatusBadRequest},
		"bad port":       {target: "/sandboxes/ns/box/", headers: map[string]string{"X-Sandbox-Port": "0"}, code: http.StatusBadRequest},
		"bad id":         {target: "/", headers: map[string]string{"X-Sandbox-ID": "a.b"}, code: http.StatusBadRequest},
		"bad ns header":  {target: "/", headers: map[string]string{"X-Sandbox-ID": "a", "X-Sandbox-Namespace": "-x"}, code: http.StatusBadRequest},
		"NaN timeout":    {target: "/sandboxes/ns/box/", headers: map[string]string{"X-Sandbox-Timeout": "NaN"}, code: http.StatusBadRequest},
		"zero timeout":   {target: "/sandboxes/ns/box/", headers: map[string]string{"X-Sandbox-Timeout": "0"}, code: http.StatusBadRequest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.target, nil)
			for k, v := range tc.headers {
				if k == "Host" {
					r.Host = v
				} else {
					r.Header.Set(k, v)
				}
			}
			got, herr := rt.parseProxyRoute(r)
			if tc.code != 0 {
				if herr == nil || herr.Code != tc.code {
					t.Fatalf("parseProxyRoute = %+v, %v; want error %d", got, herr, tc.code)
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

func TestClientLimiter(t *testing.T) {
	l := newClientLimiter(2)
	r1, ok1 := l.acquire("a")
	_, ok2 := l.acquire("a")
	_, ok3 := l.acquire("a")
	_, okOther := l.acquire("b")
	if !ok1 || !ok2 || ok3 || !okOther {
		t.Fatalf("acquire: %v %v %v %v; want the third for one client refused, another client admitted", ok1, ok2, ok3, okOther)
	}
	r1()
	if _, ok := l.acquire("a"); !ok {
		t.Error("a released slot was not given back")
	}
	if _, ok := newClientLimiter(0).acquire("a"); !ok {
		t.Error("a limit of 0 must mean unlimited")
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.AgentTokenKey = make([]byte, 32)
	if err := good.validate(); err != nil {
		t.Fatalf("the default configuration with a key: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"no key":                           func(c *Config) { c.AgentTokenKey = nil },
		"short key":                        func(c *Config) { c.AgentTokenKey = make([]byte, 31) },
		"proxy timeout":                    func(c *Config) { c.ProxyTimeout = 0 },
		"negative limit":                   func(c *Config) { c.MaxRequestBodyBytes = -1 },
		"preview domain":                   func(c *Config) { c.PreviewDomain = "http://x" },
		"claim token ttl":                  func(c *Config) { c.ClaimTokenMaxTTL = 0 },
		"path routing without its host":    func(c *Config) { c.PathRoutingPrefix = "/browse" },
		"path-routing host without routes": func(c *Config) { c.PathRoutingHost = "sandboxes.example.com" },
		"path-routing host with a port": func(c *Config) {
			c.PathRoutingPrefix, c.PathRoutingHost = "/browse", "sandboxes.example.com:443"
		},
		"path-routing host under the preview domain": func(c *Config) {
			c.PathRoutingPrefix, c.PathRoutingHost, c.PreviewDomain = "/browse", "x.preview.example.com", "preview.example.com"
		},
		"path-routing host under the E2B domain": func(c *Config) {
			c.PathRoutingPrefix, c.PathRoutingHost, c.E2BDomain = "/browse", "e2b.example.com", "e2b.example.com"
		},
	} {
		c := good
		mutate(&c)
		if c.validate() == nil {
			t.Errorf("%s: validate accepted %+v", name, c)
		}
	}
}
