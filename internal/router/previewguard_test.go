package router

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestCheckCookieSite(t *testing.T) {
	const host = "3000-aaaaaaaaaaaa.preview.test:8080"
	self, other := "http://"+host, "http://3000-bbbbbbbbbbbb.preview.test:8080"
	for _, tc := range []struct {
		name, method, site, mode, dest, origin string
		ok                                     bool
	}{
		{"same origin POST", "POST", "same-origin", "cors", "empty", self, true},
		{"same-site POST (another sandbox)", "POST", "same-site", "cors", "empty", other, false},
		{"cross-site POST", "POST", "cross-site", "cors", "empty", "https://evil.example", false},
		{"cross-site form navigation POST", "POST", "cross-site", "navigate", "document", "https://evil.example", false},
		{"cross-site link GET", "GET", "cross-site", "navigate", "document", "", true},
		{"same-site iframe GET", "GET", "same-site", "navigate", "iframe", "", false},
		{"same-site fetch GET", "GET", "same-site", "cors", "empty", other, false},
		{"same-site no-cors GET (img)", "GET", "same-site", "no-cors", "image", "", false},
		{"typed address", "GET", "none", "navigate", "document", "", true},
		{"old browser POST with its own Origin", "POST", "", "", "", self, true},
		{"old browser POST with its own Origin, default port", "POST", "", "", "", "http://3000-aaaaaaaaaaaa.preview.test", false},
		{"old browser POST from elsewhere", "POST", "", "", "", other, false},
		{"Origin null", "POST", "", "", "", "null", false},
		{"no browser POST", "POST", "", "", "", "", true},
		{"no browser GET", "GET", "", "", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://"+host+"/", nil)
			for k, v := range map[string]string{"Sec-Fetch-Site": tc.site, "Sec-Fetch-Mode": tc.mode, "Sec-Fetch-Dest": tc.dest, "Origin": tc.origin} {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			if herr := checkCookieSite(r); (herr == nil) != tc.ok {
				t.Errorf("checkCookieSite = %v; want allowed %v", herr, tc.ok)
			}
		})
	}
}

// FuzzCheckCookieSite: a cookie request with a method other than GET or HEAD passes only from
// the preview host's own origin, or from no browser at all (no Origin, no Sec-Fetch-Site).
func FuzzCheckCookieSite(f *testing.F) {
	f.Add("POST", "same-site", "http://3000-bbbbbbbbbbbb.preview.test")
	f.Add("PUT", "", "http://3000-aaaaaaaaaaaa.preview.test:8080")
	f.Add("DELETE", "cross-site", "")
	f.Add("POST", "none", "null")
	f.Fuzz(func(t *testing.T, method, site, origin string) {
		const host = "3000-aaaaaaaaaaaa.preview.test:8080"
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		r.Method = method
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if checkCookieSite(r) != nil || method == http.MethodGet || method == http.MethodHead {
			return
		}
		s := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")))
		o := r.Header.Get("Origin")
		if (s == "same-site" || s == "cross-site") || (o != "" && !sameOrigin(o, host)) {
			t.Errorf("%s with Sec-Fetch-Site %q and Origin %q passed", method, site, origin)
		}
	})
}

func TestCheckPreviewPortRefusesEveryAgentPort(t *testing.T) {
	sb := &sandboxv1beta1.Sandbox{}
	sb.Namespace, sb.Name = "ns", "sb"
	sb.Status.Agent = &sandboxv1beta1.AgentStatus{Port: 7070, CompatibilityPort: 8888, SandboxdGRPCPort: 9090, SandboxdRESTPort: 8080}
	rt := &Router{}
	for _, port := range []int{7070, 8888, 9090, 8080} {
		if herr := rt.checkPreviewPort(sb, port); herr == nil || herr.Code != http.StatusForbidden {
			t.Errorf("preview port %d, which status.agent records: %v; want 403", port, herr)
		}
	}
	// The code interpreter's port runs code with the agent token the router adds: a page must
	// not reach it through a preview host (or a path route, which asks agentPortRole too).
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{}
	if herr := rt.checkPreviewPort(sb, contract.E2BCodeInterpreterPort); herr == nil || herr.Code != http.StatusForbidden {
		t.Errorf("preview port %d, the agent's code interpreter: %v; want 403", contract.E2BCodeInterpreterPort, herr)
	}
	if herr := rt.checkPreviewPort(sb, 3000); herr != nil {
		t.Errorf("preview port 3000, an app's: %v; want it served", herr)
	}
}
