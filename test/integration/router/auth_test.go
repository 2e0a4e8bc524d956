package router

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
)

func TestNoCredentialsIsUnauthorizedAndSaysWhatToSend(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	startAgentSandbox(t, ns, "box")

	for name, tc := range map[string]struct {
		headers []string
	}{
		"no header":        {},
		"basic auth":       {headers: []string{"Authorization: Basic dXNlcjpwYXNz"}},
		"garbage token":    {headers: []string{bearer("not-a-kubernetes-token")}},
		"forged claim tok": {headers: []string{bearer("kbx1.eyJucyI6ImEifQ.c2ln")}},
	} {
		t.Run(name, func(t *testing.T) {
			res := do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/healthz", "", tc.headers...)
			if res.code != http.StatusUnauthorized || res.hdr.Get("WWW-Authenticate") == "" {
				t.Fatalf("%s; want 401 with WWW-Authenticate", res)
			}
			if name == "no header" {
				msg := res.errorMessage()
				for _, want := range []string{"Kubernetes token", "sandboxes/connect", "claim token", "shared token"} {
					if !strings.Contains(msg, want) {
						t.Errorf("401 message %q does not mention %q", msg, want)
					}
				}
			}
		})
	}
}

func TestServiceAccountNeedsRBACForTheSandbox(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, nil)
	startAgentSandbox(t, ns, "a")
	startAgentSandbox(t, ns, "b")
	tok := serviceAccountToken(t, ns, "dev")
	grantConnect(t, ns, "dev", sandboxesGroup, "sandboxes", "a")

	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/sandboxes/"+ns+"/a/healthz", "", bearer(tok))
	res := do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/b/healthz", "", bearer(tok))
	if res.code != http.StatusForbidden || !strings.Contains(res.errorMessage(), "sandboxes/connect") {
		t.Errorf("sandbox b: %s; want 403 naming sandboxes/connect", res)
	}
	// Header routes are sandbox routes too.
	if res := do(t, http.MethodGet, rt.url+"/healthz", "", "X-Sandbox-ID: b", "X-Sandbox-Namespace: "+ns, bearer(tok)); res.code != http.StatusForbidden {
		t.Errorf("sandbox b by header: %s; want 403", res)
	}
	// Sandbox rights do not open claims: those need sandboxclaims/connect.
	createClaim(t, ns, "claim-a", "a")
	res = eventuallyStatus(t, http.StatusForbidden, http.MethodGet, rt.url+"/claims/"+ns+"/claim-a/healthz", "", bearer(tok))
	if !strings.Contains(res.errorMessage(), "sandboxclaims/connect") {
		t.Errorf("claim-a: %s; want 403 naming sandboxclaims/connect", res)
	}
	grantConnect(t, ns, "dev", claimsGroup, "sandboxclaims", "claim-a")
	// The router remembers the refusal for the TokenReview cache TTL; a fresh router asks again.
	rt2 := startRouter(t, ns, nil)
	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt2.url+"/claims/"+ns+"/claim-a/healthz", "", bearer(tok))
	if got := counter(t, rt, "sandbox_router_authz_decisions_total", `decision="deny"`); got < 2 {
		t.Errorf("sandbox_router_authz_decisions_total{decision=deny} = %v, want at least 2", got)
	}
}

// mintToken asks the router for a claim token with tok's identity.
func mintToken(t *testing.T, rt *testRouter, ns, claim, tok, body string) (string, response) {
	t.Helper()
	res := do(t, http.MethodPost, rt.url+"/v1/claims/"+ns+"/"+claim+"/token", body, bearer(tok))
	var out struct {
		Token, ExpiresAt, Claim, Namespace string
	}
	if res.code == http.StatusOK {
		if err := json.Unmarshal([]byte(res.body), &out); err != nil || out.Claim != claim || out.Namespace != ns {
			t.Fatalf("mint answer %s: %v", res, err)
		}
		if exp, err := time.Parse(time.RFC3339, out.ExpiresAt); err != nil || time.Until(exp) <= 0 {
			t.Errorf("expiresAt %q is not a future RFC 3339 time", out.ExpiresAt)
		}
	}
	return out.Token, res
}

func TestClaimTokenOpensOnlyItsClaimAndSandbox(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, nil)
	startAgentSandbox(t, ns, "bound")
	startAgentSandbox(t, ns, "other")
	claim := createClaim(t, ns, "mine", "bound")
	createClaim(t, ns, "theirs", "other")
	sa := serviceAccountToken(t, ns, "owner")
	grantConnect(t, ns, "owner", claimsGroup, "sandboxclaims", "mine")

	if _, res := mintToken(t, rt, ns, "theirs", sa, ""); res.code != http.StatusForbidden {
		t.Errorf("minting for a claim without RBAC: %s; want 403", res)
	}
	if _, res := mintToken(t, rt, ns, "mine", "", ""); res.code != http.StatusUnauthorized {
		t.Errorf("minting without credentials: %s; want 401", res)
	}
	if _, res := mintToken(t, rt, ns, "mine", sa, `{"ttlSeconds": 999999999}`); res.code != http.StatusBadRequest {
		t.Errorf("minting beyond the maximum TTL: %s; want 400", res)
	}
	var tok string
	eventually(t, func() (bool, string) {
		var res response
		tok, res = mintToken(t, rt, ns, "mine", sa, `{"ttlSeconds": 600}`)
		return res.code == http.StatusOK, res.String()
	})
	if _, res := mintToken(t, rt, ns, "mine", tok, ""); res.code != http.StatusForbidden {
		t.Errorf("a claim token minting another: %s; want 403", res)
	}

	for path, want := range map[string]int{
		"/claims/" + ns + "/mine/healthz":     http.StatusOK,
		"/sandboxes/" + ns + "/bound/healthz": http.StatusOK,
		"/sandboxes/" + ns + "/other/healthz": http.StatusForbidden,
		"/claims/" + ns + "/theirs/healthz":   http.StatusForbidden,
	} {
		if res := do(t, http.MethodGet, rt.url+path, "", bearer(tok)); res.code != want {
			t.Errorf("%s with the claim token: %s; want %d", path, res, want)
		}
	}
	if res := do(t, http.MethodGet, rt.url+"/healthz", "", "X-Sandbox-ID: other", "X-Sandbox-Namespace: "+ns, bearer(tok)); res.code != http.StatusForbidden {
		t.Errorf("header route to another sandbox with the claim token: %s; want 403", res)
	}

	// Deleting the claim ends the token, as soon as the router's cache sees it.
	if err := env.Client.Delete(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	res := eventuallyStatus(t, http.StatusUnauthorized, http.MethodGet, rt.url+"/sandboxes/"+ns+"/bound/healthz", "", bearer(tok))
	if !strings.Contains(res.errorMessage(), "no longer exists") {
		t.Errorf("after deleting the claim: %s; want a message saying the claim is gone", res)
	}
	// A claim recreated under the same name, bound to the same sandbox, is another claim.
	recreated := createClaim(t, ns, "mine", "bound")
	if recreated.UID == claim.UID {
		t.Fatal("the recreated claim has the old UID")
	}
	// Wait until the router sees the new claim (a fresh token opens it), then try the old token.
	var fresh string
	eventually(t, func() (bool, string) {
		var r response
		fresh, r = mintToken(t, rt, ns, "mine", sa, "")
		if r.code != http.StatusOK {
			return false, r.String()
		}
		r = do(t, http.MethodGet, rt.url+"/claims/"+ns+"/mine/healthz", "", bearer(fresh))
		return r.code == http.StatusOK, r.String()
	})
	if res := do(t, http.MethodGet, rt.url+"/claims/"+ns+"/mine/healthz", "", bearer(tok)); res.code != http.StatusUnauthorized {
		t.Errorf("the old claim's token on the recreated claim: %s; want 401", res)
	}
}

func TestSharedToken(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	startAgentSandbox(t, ns, "box")
	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/healthz", "", bearer(sharedToken))
	if res := do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/healthz", "", bearer(sharedToken+"x")); res.code != http.StatusUnauthorized {
		t.Errorf("a wrong shared token: %s; want 401", res)
	}
	if _, res := mintToken(t, rt, ns, "nope", sharedToken, ""); res.code != http.StatusNotFound {
		t.Errorf("minting for a missing claim with the shared token: %s; want 404", res)
	}
}

func TestUnauthenticatedHeaderRoutingAdmitsOnlyHeaderRoutes(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, func(c *router.Config) { c.AllowUnauthenticatedHeaderRouting = true })
	a := startAgentSandbox(t, ns, "py")
	eventuallyStatus(t, http.StatusOK, http.MethodPost, rt.url+"/execute", `{"command": "true"}`,
		"X-Sandbox-ID: py", "X-Sandbox-Namespace: "+ns, "X-Sandbox-Port: "+strconv.Itoa(a.compatPort))
	for _, path := range []string{"/sandboxes/" + ns + "/py/healthz", "/claims/" + ns + "/py/healthz"} {
		if res := do(t, http.MethodGet, rt.url+path, ""); res.code != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %s; want 401 (path routes always need credentials)", path, res)
		}
	}
}

// TestConfiguredTokenIsEnforcedInUnauthenticatedMode: with the unauthenticated mode on and a
// shared token configured (ALLOW_UNAUTHENTICATED_ROUTER=true and ROUTER_AUTH_TOKEN), header routes
// still need that token.
func TestConfiguredTokenIsEnforcedInUnauthenticatedMode(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, func(c *router.Config) { withSharedToken(c); c.AllowUnauthenticatedHeaderRouting = true })
	a := startAgentSandbox(t, ns, "py")
	headers := []string{"X-Sandbox-ID: py", "X-Sandbox-Namespace: " + ns, "X-Sandbox-Port: " + strconv.Itoa(a.compatPort)}
	eventuallyStatus(t, http.StatusOK, http.MethodPost, rt.url+"/execute", `{"command": "true"}`, append(headers, bearer(sharedToken))...)
	for name, extra := range map[string][]string{"no token": nil, "a wrong token": {bearer(strings.Repeat("x", 40))}} {
		if res := do(t, http.MethodPost, rt.url+"/execute", `{"command": "true"}`, append(headers, extra...)...); res.code != http.StatusUnauthorized {
			t.Errorf("header route with %s while a shared token is configured: %s; want 401", name, res)
		}
	}
}

func TestTheSandboxSeesOnlyTheRoutersCredentials(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	fake := startRecordingServer(t) // stands for the agent on the sandbox's agent port
	sb := createSandbox(t, ns, "box", &sandboxv1beta1.AgentSpec{Port: ptrInt32(fake.port())})
	markReady(t, sb, "127.0.0.1")

	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/some/path?x=1", "",
		bearer(sharedToken), "X-Sandbox-Pod-IP: 10.0.0.99", "X-Sandbox-UID: spoofed", "X-Sandbox-Timeout: 30",
		"Cookie: kubox-token=secret; session=abc", "Connection: X-Private", "X-Private: hop", "Keep-Alive: timeout=5",
		"X-Forwarded-For: 203.0.113.9", "X-Custom: kept")
	got := fake.lastRequest(t)
	if want := "Bearer " + contract.DeriveAgentToken(key, sb.UID); got.Header.Get("Authorization") != want {
		t.Errorf("Authorization at the agent %q, want the sandbox's derived agent token", got.Header.Get("Authorization"))
	}
	if got.URL.RequestURI() != "/some/path?x=1" {
		t.Errorf("the agent got %q, want /some/path?x=1", got.URL.RequestURI())
	}
	for k := range got.Header {
		if strings.HasPrefix(k, "X-Sandbox-") {
			t.Errorf("the agent got the routing header %s", k)
		}
	}
	for _, k := range []string{"X-Private", "Keep-Alive"} {
		if got.Header.Get(k) != "" {
			t.Errorf("the agent got the hop-by-hop header %s", k)
		}
	}
	if c := got.Header.Get("Cookie"); c != "session=abc" {
		t.Errorf("Cookie at the agent %q, want session=abc only", c)
	}
	if v := got.Header.Get("X-Custom"); v != "kept" {
		t.Errorf("X-Custom at the agent %q, want it passed through", v)
	}
	if v := got.Header.Get("X-Forwarded-For"); v != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q, want the client's address only (what clients send is not trusted)", v)
	}
	if got.Header.Get("X-Forwarded-Host") != strings.TrimPrefix(rt.url, "http://") || got.Header.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("X-Forwarded-Host %q, X-Forwarded-Proto %q; want the router's host and http",
			got.Header.Get("X-Forwarded-Host"), got.Header.Get("X-Forwarded-Proto"))
	}
	// A Sandbox status naming a loopback IP is refused unless the router allows it (tests do).
	strict := startRouter(t, ns, func(c *router.Config) { withSharedToken(c); c.AllowLoopbackPodIP = false })
	if res := do(t, http.MethodGet, strict.url+"/sandboxes/"+ns+"/box/", "", bearer(sharedToken)); res.code != http.StatusBadGateway {
		t.Errorf("loopback pod IP without --allow-loopback-pod-ip: %s; want 502", res)
	}
}
