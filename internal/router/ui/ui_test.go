package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// newTestHandler serves the dashboard with an authenticator that knows two tokens and an API
// server nothing listens on (these tests never reach it).
func newTestHandler(t *testing.T, namespace string) *Handler {
	t.Helper()
	h, err := New(Options{RestConfig: &rest.Config{Host: "http://127.0.0.1:1"}, Namespace: namespace,
		Authenticate: func(_ *http.Request, tok string) (string, *Error) {
			switch tok {
			case "alice-token":
				return "alice", nil
			case "sa-token":
				return "system:serviceaccount:team-a:ci", nil
			}
			return "", errorf(http.StatusUnauthorized, "unknown token")
		}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(h http.Handler, method, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAssetsNeedNoToken(t *testing.T) {
	h := newTestHandler(t, "")
	w := serve(h, http.MethodGet, "/ui/", "")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `src="app.js"`) {
		t.Fatalf("GET /ui/: %d %q; want 200 and the page", w.Code, w.Body.String())
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("GET /ui/ has Content-Security-Policy %q; want the page confined to its own origin and never framed", csp)
	}
	if w := serve(h, http.MethodGet, "/ui/app.js", ""); w.Code != http.StatusOK || w.Body.Len() == 0 {
		t.Errorf("GET /ui/app.js: %d with %d bytes; want 200 and the bundle", w.Code, w.Body.Len())
	}
	r := httptest.NewRequest(http.MethodGet, "/ui/app.js", nil)
	r.Header.Set("Accept-Encoding", "br, gzip")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Header().Get("Content-Encoding") != "gzip" || w.Body.Len() >= len(h.assets["app.js"].body)/2 {
		t.Errorf("GET /ui/app.js accepting gzip: Content-Encoding %q, %d bytes; want it compressed", w.Header().Get("Content-Encoding"), w.Body.Len())
	}
	r = httptest.NewRequest(http.MethodGet, "/ui/app.js", nil)
	r.Header.Set("If-None-Match", w.Header().Get("ETag"))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNotModified {
		t.Errorf("GET /ui/app.js with its ETag: %d; want 304", w.Code)
	}
	if w := serve(h, http.MethodGet, "/ui/nothing.js", ""); w.Code != http.StatusNotFound {
		t.Errorf("GET /ui/nothing.js: %d; want 404", w.Code)
	}
	if w := serve(h, http.MethodGet, "/ui", ""); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q; want a redirect to /ui/", w.Code, w.Header().Get("Location"))
	}
}

func TestAPIAuthentication(t *testing.T) {
	for name, tc := range map[string]struct {
		namespace, token string
		wantCode         int
		wantNamespace    string
	}{
		"no token":                                  {token: "", wantCode: http.StatusUnauthorized},
		"a token the router refuses":                {token: "junk", wantCode: http.StatusUnauthorized},
		"a user: namespace default":                 {token: "alice-token", wantCode: http.StatusOK, wantNamespace: "default"},
		"a ServiceAccount: its namespace":           {token: "sa-token", wantCode: http.StatusOK, wantNamespace: "team-a"},
		"a router of one namespace: that namespace": {namespace: "only", token: "sa-token", wantCode: http.StatusOK, wantNamespace: "only"},
	} {
		t.Run(name, func(t *testing.T) {
			w := serve(newTestHandler(t, tc.namespace), http.MethodGet, "/ui/api/whoami", tc.token)
			if w.Code != tc.wantCode {
				t.Fatalf("GET whoami: %d %s; want %d", w.Code, w.Body.String(), tc.wantCode)
			}
			if tc.wantCode == http.StatusUnauthorized {
				if w.Header().Get("WWW-Authenticate") == "" {
					t.Errorf("A 401 without WWW-Authenticate")
				}
				return
			}
			var got struct{ User, Namespace string }
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Namespace != tc.wantNamespace {
				t.Errorf("GET whoami: %s (%v); want namespace %q", w.Body.String(), err, tc.wantNamespace)
			}
		})
	}
}

func TestAPIRefusesOtherNamespaces(t *testing.T) {
	h := newTestHandler(t, "only")
	for path, want := range map[string]int{
		"/ui/api/namespaces/other/overview":                       http.StatusNotFound,
		"/ui/api/namespaces/Not_A_Name/overview":                  http.StatusBadRequest,
		"/ui/api/namespaces/only/sandboxes/a..b":                  http.StatusBadRequest,
		"/ui/api/nothing-here":                                    http.StatusNotFound,
		"/ui/api/namespaces/only/sandboxes/x/files?path=relative": http.StatusBadRequest,
	} {
		if w := serve(h, http.MethodGet, path, "alice-token"); w.Code != want {
			t.Errorf("GET %s: %d %s; want %d", path, w.Code, w.Body.String(), want)
		}
	}
}

// TestMetricsPoolsNeedListInTheNamespace: a namespace's pool sizes, and its templates' names,
// go only to a viewer whom a SelfSubjectAccessReview made with their own token allows to list
// the namespace's warm pools.
func TestMetricsPoolsNeedListInTheNamespace(t *testing.T) {
	h := newTestHandler(t, "")
	h.metrics.url = "http://controller/metrics"
	var reviews []string
	h.review = func(ctx context.Context, a *authorizationv1.ResourceAttributes) (bool, error) {
		tok, _ := ctx.Value(tokenKey{}).(string)
		reviews = append(reviews, fmt.Sprintf("%s %s/%s %s %s", tok, a.Group, a.Resource, a.Verb, a.Namespace))
		if a.Namespace == "broken" {
			return false, errors.New("the API server is away")
		}
		return tok == "alice-token" && a.Namespace == "team-a", nil
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h.metrics.add(t0, sample{totals: map[string]float64{}})
	h.metrics.add(t0.Add(scrapeInterval), sample{totals: map[string]float64{}, pools: map[poolKey]poolCount{
		{"team-a", "python"}: {ready: 2, total: 3}, {"team-b", "secret-template"}: {ready: 1, total: 1}}})

	w := serve(h, http.MethodGet, "/ui/api/namespaces/team-a/metrics", "alice-token")
	var got struct {
		Pools       []poolSeries `json:"pools"`
		PoolsDenied string       `json:"poolsDenied"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != http.StatusOK || err != nil {
		t.Fatalf("GET team-a's metrics as alice: %d %s (%v); want 200", w.Code, w.Body.String(), err)
	}
	want := []poolSeries{{Template: "python", Points: []poolPoint{{Time: t0.Add(scrapeInterval), Ready: 2, Total: 3}}}}
	if diff := cmp.Diff(want, got.Pools); diff != "" || got.PoolsDenied != "" {
		t.Errorf("team-a's pools as alice (-want +got):\n%s\ndenied %q", diff, got.PoolsDenied)
	}
	for _, tc := range []struct{ ns, token string }{{"team-b", "alice-token"}, {"team-a", "sa-token"}, {"broken", "alice-token"}} {
		w := serve(h, http.MethodGet, "/ui/api/namespaces/"+tc.ns+"/metrics", tc.token)
		if body := w.Body.String(); strings.Contains(body, "template") || strings.Contains(body, "python") {
			t.Errorf("GET %s's metrics as %s: %d %s; want no template named", tc.ns, tc.token, w.Code, body)
		}
		if tc.ns != "broken" && (w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "poolsDenied")) {
			t.Errorf("GET %s's metrics as %s: %d %s; want 200 saying the pools are not shown", tc.ns, tc.token, w.Code, w.Body.String())
		}
	}
	if w := serve(h, http.MethodGet, "/ui/api/metrics", "alice-token"); strings.Contains(w.Body.String(), "template") {
		t.Errorf("GET metrics: %s; want no template named", w.Body.String())
	}
	wantReviews := []string{
		"alice-token extensions.agents.x-k8s.io/sandboxwarmpools list team-a",
		"alice-token extensions.agents.x-k8s.io/sandboxwarmpools list team-b",
		"sa-token extensions.agents.x-k8s.io/sandboxwarmpools list team-a",
		"alice-token extensions.agents.x-k8s.io/sandboxwarmpools list broken",
	}
	if diff := cmp.Diff(wantReviews, reviews); diff != "" {
		t.Errorf("SelfSubjectAccessReviews (-want +got):\n%s", diff)
	}
}
