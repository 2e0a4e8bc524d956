package e2b

import (
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
)

// TestOnlyConnectMintsEnvdAccessTokens: an envd access token runs commands in a sandbox, so no
// E2B call hands one to an identity RBAC does not allow to create sandboxclaims/connect on the
// claim: a reader (get, list on sandboxclaims) gets the sandbox's details without a token, and
// one that may also patch claims cannot connect, resume or create. The token the allowed caller
// gets lives until the sandbox's timeout, not for the router's longest lifetime.
// (Issue #36, hole 5: GET /sandboxes/{id} minted 24-hour tokens for readers.)
func TestOnlyConnectMintsEnvdAccessTokens(t *testing.T) {
	f := setup(t)
	before := time.Now()
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 600})
	exp := tokenExpiry(t, sb.EnvdAccessToken)
	if exp.After(before.Add(600*time.Second+2*time.Second)) || exp.Before(before.Add(590*time.Second)) {
		t.Errorf("the envd access token of a sandbox with a 600 s timeout expires at %s, %s after create; want its timeout",
			exp, exp.Sub(before).Round(time.Second))
	}

	readRule := rbacv1.PolicyRule{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxclaims"},
		Verbs: []string{"get", "list"}}
	patchRule := rbacv1.PolicyRule{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxclaims"},
		Verbs: []string{"create", "patch"}}
	templates := rbacv1.PolicyRule{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxwarmpools", "sandboxtemplates"},
		Verbs: []string{"get"}}
	sandboxes := rbacv1.PolicyRule{APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes"},
		Verbs: []string{"get", "patch"}}
	reader := f.identity(t, "reader", readRule)
	// patcher has every right E2B's calls need but sandboxclaims/connect.
	patcher := f.identity(t, "patcher", readRule, patchRule, templates, sandboxes)

	for name, key := range map[string]string{"reader": reader, "patcher": patcher} {
		t.Run(name, func(t *testing.T) {
			var d detail
			if code := f.api(t, key, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &d); code != http.StatusOK {
				t.Fatalf("getInfo answered %d; want 200 (the caller may read the claim)", code)
			}
			if d.EnvdAccessToken != "" {
				out, exit := f.run(t, sb.SandboxID, d.EnvdAccessToken, "echo", "owned")
				t.Fatalf("getInfo gave an identity without sandboxclaims/connect an envd access token, with which it ran "+
					"a command in %s: %q (exit %d)", sb.SandboxID, out, exit)
			}
			if code := f.envdStatus(t, sb.SandboxID, ""); code != http.StatusUnauthorized {
				t.Errorf("envd without a token answered %d, not 401", code)
			}
			for _, path := range []string{"/sandboxes/" + sb.SandboxID + "/connect", "/v2/sandboxes/" + sb.SandboxID + "/connect"} {
				var got sandbox
				code := f.api(t, key, http.MethodPost, path, map[string]any{"timeout": 60}, &got)
				if code != http.StatusForbidden || got.EnvdAccessToken != "" {
					t.Errorf("POST %s answered %d with token %v; want 403 and none", path, code, got.EnvdAccessToken != "")
				}
			}
		})
	}
	var got sandbox
	if code := f.api(t, patcher, http.MethodPost, "/sandboxes", map[string]any{"templateID": pool}, &got); code != http.StatusForbidden || got.EnvdAccessToken != "" {
		t.Errorf("create by an identity without sandboxclaims/connect answered %d with token %v; want 403 and none", code, got.EnvdAccessToken != "")
	}
	list := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("the namespace has %d SandboxClaims; want only the one created with connect rights (a refused create leaves none)", len(list.Items))
	}

	var d detail
	if code := f.api(t, f.apiKey, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &d); code != http.StatusOK || d.EnvdAccessToken == "" {
		t.Fatalf("getInfo by the owner, who may connect, answered %d with token %v; want 200 and a token", code, d.EnvdAccessToken != "")
	}
	if out, exit := f.run(t, sb.SandboxID, d.EnvdAccessToken, "echo", "mine"); out != "mine\n" || exit != 0 {
		t.Errorf("the owner's token from getInfo ran a command with %q, exit %d", out, exit)
	}
}

// identity is the E2B API key of a new ServiceAccount name with rules.
func (f *fixture) identity(t *testing.T, name string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	tok := env.ServiceAccountToken(t, f.ns, name)
	env.Grant(t, f.ns, name, name, rules...)
	return contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(tok))
}

// tokenExpiry is when a claim token expires, read from its payload.
func tokenExpiry(t *testing.T, tok string) time.Time {
	t.Helper()
	c, err := claimtoken.Peek(tok, time.Time{})
	if err != nil {
		t.Fatalf("the envd access token is no claim token: %v", err)
	}
	return c.ExpiresAt()
}
