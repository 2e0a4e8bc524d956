package router

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const testOrigin = "https://app.example.com"

// TestCORS: a preflight for an agent API route from an allowed origin is answered by the router
// itself (it carries no token), a call from it gets the origin back, and every other origin, and
// every other route, gets no CORS header, so the browser keeps the answer from the page.
func TestCORS(t *testing.T) {
	rt := &Router{cfg: Config{CORSAllowedOrigins: []string{testOrigin}}}
	for _, tc := range []struct {
		name, method, path, origin string
		preflight                  bool
		wantAnswered               bool
		wantOrigin                 string
	}{
		{name: "preflight of a claim route", method: http.MethodOptions, path: "/claims/ns/c/kubox.agent.v1.ProcessService/RunProcess",
			origin: testOrigin, preflight: true, wantAnswered: true, wantOrigin: testOrigin},
		{name: "preflight of a sandbox route", method: http.MethodOptions, path: "/sandboxes/ns/s/files/a.txt",
			origin: testOrigin, preflight: true, wantAnswered: true, wantOrigin: testOrigin},
		{name: "call from the origin", method: http.MethodPost, path: "/claims/ns/c/x", origin: testOrigin, wantOrigin: testOrigin},
		{name: "OPTIONS that is no preflight goes to the sandbox", method: http.MethodOptions, path: "/claims/ns/c/x",
			origin: testOrigin, wantOrigin: testOrigin},
		{name: "preflight from another origin", method: http.MethodOptions, path: "/claims/ns/c/x", origin: "https://evil.example",
			preflight: true},
		{name: "an origin's prefix is not the origin", method: http.MethodOptions, path: "/claims/ns/c/x",
			origin: testOrigin + ".evil.example", preflight: true},
		{name: "no Origin", method: http.MethodPost, path: "/claims/ns/c/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.preflight {
				r.Header.Set("Access-Control-Request-Method", http.MethodPost)
			}
			w := httptest.NewRecorder()
			answered := rt.serveCORS(w, r)
			if answered != tc.wantAnswered {
				t.Fatalf("serveCORS answered %v; want %v", answered, tc.wantAnswered)
			}
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != tc.wantOrigin {
				t.Errorf("Access-Control-Allow-Origin %q; want %q", got, tc.wantOrigin)
			}
			if w.Header().Get("Access-Control-Allow-Credentials") != "" {
				t.Error("the router allowed credentials (cookies) to another origin")
			}
			if !answered {
				return
			}
			if w.Code != http.StatusNoContent {
				t.Errorf("preflight answered %d; want 204", w.Code)
			}
			allowed := w.Header().Get("Access-Control-Allow-Headers")
			for _, h := range []string{"Authorization", "Content-Type", "Connect-Protocol-Version"} {
				if !strings.Contains(allowed, h) {
					t.Errorf("Access-Control-Allow-Headers %q lacks %s, which the SDK sends", allowed, h)
				}
			}
		})
	}
}

// TestCORSOnlyAgentRoutes: the router answers preflights on /sandboxes/ and /claims/ only, not on
// its other paths (the claim token mint, the dashboard), which need Kubernetes credentials.
func TestCORSOnlyAgentRoutes(t *testing.T) {
	rt := &Router{cfg: Config{CORSAllowedOrigins: []string{testOrigin}}}
	for path, want := range map[string]bool{"/claims/ns/c/files/a": true, "/sandboxes/ns/s/x": true, "/v1/claims/ns/c/token": false} {
		r := httptest.NewRequest(http.MethodOptions, path, nil)
		r.Header.Set("Origin", testOrigin)
		r.Header.Set("Access-Control-Request-Method", http.MethodPost)
		w := httptest.NewRecorder()
		rt.serveHTTP(w, r)
		if got := w.Code == http.StatusNoContent && w.Header().Get("Access-Control-Allow-Origin") == testOrigin; got != want {
			t.Errorf("preflight of %s answered with CORS %v (status %d); want %v", path, got, w.Code, want)
		}
	}
}

func TestValidateOrigin(t *testing.T) {
	for o, ok := range map[string]bool{
		"https://app.example.com": true, "http://127.0.0.1:8000": true, "http://[::1]:3000": true,
		"*": false, "https://app.example.com/": false, "https://app.example.com/x": false, "app.example.com": false,
		"ftp://app.example.com": false, "https://u@app.example.com": false, "": false,
	} {
		if err := validateOrigin(o); (err == nil) != ok {
			t.Errorf("validateOrigin(%q) = %v; want ok %v", o, err, ok)
		}
	}
}
