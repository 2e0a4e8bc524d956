package e2b

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// A sandbox's life through E2B's control API, as the ServiceAccount whose token is the API key:
// create from a warm pool (metadata, env, timeout on the claim), get, list with filters,
// setTimeout, pause and resume (the Sandbox suspended and running again), connect, kill.
func TestSandboxLifecycle(t *testing.T) {
	f := setup(t)
	before := time.Now()
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 300,
		"metadata": map[string]string{"user": "alice", "note": "free text, with spaces"}, "envVars": map[string]string{"GREETING": "hi"}})
	if sb.TemplateID != pool {
		t.Errorf("templateID = %q, want %q", sb.TemplateID, pool)
	}
	claim := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, sb.SandboxID)
	if claim.Spec.WarmPoolRef == nil || claim.Spec.WarmPoolRef.Name != pool {
		t.Errorf("the claim's warmPoolRef is %+v, want %s", claim.Spec.WarmPoolRef, pool)
	}
	if !slices.Contains(claim.Spec.Env, extv1beta1.EnvVar{Name: "GREETING", Value: "hi"}) {
		t.Errorf("the claim's env is %+v, want GREETING=hi", claim.Spec.Env)
	}
	var md map[string]string
	if err := json.Unmarshal([]byte(claim.Annotations[contract.E2BMetadataAnnotation]), &md); err != nil || md["note"] != "free text, with spaces" {
		t.Errorf("the claim's metadata annotation is %q", claim.Annotations[contract.E2BMetadataAnnotation])
	}
	checkShutdown(t, claim, before, 300*time.Second)

	var d detail
	if code := f.api(t, f.apiKey, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &d); code != http.StatusOK ||
		d.State != "running" || d.Metadata["user"] != "alice" || d.EnvdAccessToken == "" {
		t.Errorf("get answered %d %+v", code, d)
	}
	f.checkListed(t, "", sb.SandboxID, true)
	f.checkListed(t, "?metadata="+url.QueryEscape("user=alice"), sb.SandboxID, true)
	f.checkListed(t, "?metadata="+url.QueryEscape("user=bob"), sb.SandboxID, false)
	f.checkListed(t, "?state=paused", sb.SandboxID, false)

	before = time.Now()
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/timeout", map[string]int{"timeout": 3600}, nil); code != http.StatusNoContent {
		t.Errorf("setTimeout answered %d, not 204", code)
	}
	claim = framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, sb.SandboxID)
	checkShutdown(t, claim, before, time.Hour)

	// E2B's pause needs a Filesystem snapshot no node here can take (pause_test.go): suspend the
	// Sandbox as its owner would, then see E2B's paused state, resume and connect.
	suspendSandbox(t, f.ns, claim.Status.Sandbox.Name)
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/pause", nil, nil); code != http.StatusConflict {
		t.Errorf("pausing a paused sandbox answered %d, not 409", code)
	}
	framework.WaitFor(t, framework.DefaultTimeout, func() (bool, string) {
		f.api(t, f.apiKey, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &d)
		return d.State == "paused", "state " + d.State
	})
	f.checkListed(t, "?state=paused", sb.SandboxID, true)

	var resumed sandbox
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/resume", map[string]int{"timeout": 600}, &resumed); code != http.StatusCreated ||
		resumed.SandboxID != sb.SandboxID || resumed.EnvdAccessToken == "" {
		t.Fatalf("resume answered %d %+v", code, resumed)
	}
	if s := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, claim.Status.Sandbox.Name); s.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		t.Error("after resume the Sandbox is still suspended")
	}
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/resume", nil, nil); code != http.StatusConflict {
		t.Errorf("resuming a running sandbox answered %d, not 409", code)
	}
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/connect", map[string]int{"timeout": 600}, &resumed); code != http.StatusOK {
		t.Errorf("connecting to a running sandbox answered %d, not 200", code)
	}

	if code := f.api(t, f.apiKey, http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil, nil); code != http.StatusNoContent {
		t.Fatalf("kill answered %d, not 204", code)
	}
	for _, op := range []struct{ method, path string }{{http.MethodGet, ""}, {http.MethodDelete, ""}, {http.MethodPost, "/timeout"}, {http.MethodPost, "/pause"}} {
		var body any
		if op.path == "/timeout" {
			body = map[string]int{"timeout": 10}
		}
		if code := f.api(t, f.apiKey, op.method, "/sandboxes/"+sb.SandboxID+op.path, body, nil); code != http.StatusNotFound {
			t.Errorf("%s %s of a killed sandbox answered %d, not 404", op.method, op.path, code)
		}
	}
	f.checkListed(t, "", sb.SandboxID, false)
}

// A templateID with no warm pool of its name starts the SandboxTemplate of that name, cold.
func TestCreateFromTemplateWithoutPool(t *testing.T) {
	f := setup(t)
	sb := f.create(t, map[string]any{"templateID": cold})
	claim := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, sb.SandboxID)
	if claim.Spec.SandboxTemplateRef == nil || claim.Spec.SandboxTemplateRef.Name != cold || claim.Spec.WarmPoolRef != nil {
		t.Errorf("the claim's source is %+v / %+v, want template %s", claim.Spec.WarmPoolRef, claim.Spec.SandboxTemplateRef, cold)
	}
	if sb.TemplateID != cold {
		t.Errorf("templateID = %q", sb.TemplateID)
	}
}

// Keys the router refuses answer 401, an unknown template 404, and a key without RBAC 403,
// each in E2B's error JSON; nothing is created.
func TestErrors(t *testing.T) {
	f := setup(t)
	for name, key := range map[string]string{
		"no key":        "",
		"not hex":       contract.E2BAPIKeyPrefix + "zz",
		"unknown token": contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte("not-a-kubernetes-token")),
		"raw junk":      "junk",
	} {
		if code := f.api(t, key, http.MethodPost, "/sandboxes", map[string]any{"templateID": pool}, nil); code != http.StatusUnauthorized {
			t.Errorf("%s: create answered %d, not 401", name, code)
		}
		if code := f.api(t, key, http.MethodGet, "/v2/sandboxes", nil, nil); code != http.StatusUnauthorized {
			t.Errorf("%s: list answered %d, not 401", name, code)
		}
	}
	if code := f.api(t, f.token, http.MethodGet, "/v2/sandboxes", nil, nil); code != http.StatusOK {
		t.Errorf("the raw token as API key: list answered %d, not 200", code)
	}
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes", map[string]any{"templateID": "no-such-template"}, nil); code != http.StatusNotFound {
		t.Errorf("an unknown template: create answered %d, not 404", code)
	}
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes", map[string]any{}, nil); code != http.StatusBadRequest {
		t.Errorf("no templateID: create answered %d, not 400", code)
	}
	other := env.ServiceAccountToken(t, f.ns, "no-rights")
	if code := f.api(t, other, http.MethodPost, "/sandboxes", map[string]any{"templateID": pool}, nil); code != http.StatusForbidden {
		t.Errorf("a key without RBAC: create answered %d, not 403", code)
	}
	list := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.Namespace == f.ns {
			t.Errorf("refused requests created SandboxClaim %s", c.Name)
		}
	}
}

// A create whose sandbox does not become Ready within the router's wait answers 504 and leaves
// no claim behind, as a failed E2B create leaves no sandbox.
func TestFailedCreateLeavesNoClaim(t *testing.T) {
	f := setup(t, func(c *router.Config) { c.WakeTimeout = 2 * time.Second })
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes", map[string]any{"templateID": stuck}, nil); code != http.StatusGatewayTimeout {
		t.Errorf("create from a template whose Pods never start answered %d, not 504", code)
	}
	list := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			t.Errorf("the failed create left SandboxClaim %s", c.Name)
		}
	}
}

// checkShutdown checks that claim expires, deleted, timeout after a moment between before and now.
func checkShutdown(t *testing.T, claim *extv1beta1.SandboxClaim, before time.Time, timeout time.Duration) {
	t.Helper()
	lc := claim.Spec.Lifecycle
	if lc == nil || lc.ShutdownTime == nil || lc.ShutdownPolicy != extv1beta1.ClaimShutdownPolicyDelete {
		t.Fatalf("the claim's lifecycle is %+v, want a shutdownTime and policy Delete", lc)
	}
	at := lc.ShutdownTime.Time
	if at.Before(before.Add(timeout).Add(-time.Second)) || at.After(time.Now().Add(timeout).Add(time.Second)) {
		t.Errorf("the claim's shutdownTime is %s, not %s after the request", at, timeout)
	}
}

// checkListed checks whether list (GET /v2/sandboxes with query) has id.
func (f *fixture) checkListed(t *testing.T, query, id string, want bool) {
	t.Helper()
	var list []detail
	if code := f.api(t, f.apiKey, http.MethodGet, "/v2/sandboxes"+query, nil, &list); code != http.StatusOK {
		t.Fatalf("list%s answered %d", query, code)
	}
	got := slices.ContainsFunc(list, func(d detail) bool { return d.SandboxID == id })
	if got != want {
		t.Errorf("list%s has %s: %v, want %v (%+v)", query, id, got, want, list)
	}
}

// The SDKs' current paths (POST /v2/sandboxes, /v2/sandboxes/{id}/connect) are served like the
// older ones, and an option kubox cannot honour is refused with 400, creating nothing, rather
// than given a sandbox without what it asked for.
func TestV2PathsAndUnsupportedOptions(t *testing.T) {
	f := setup(t)
	var sb sandbox
	if code := f.api(t, f.apiKey, http.MethodPost, "/v2/sandboxes", map[string]any{"templateID": pool, "timeout": 60}, &sb); code != http.StatusCreated || sb.SandboxID == "" {
		t.Fatalf("POST /v2/sandboxes answered %d, %+v; want 201 and a sandbox", code, sb)
	}
	if code := f.api(t, f.apiKey, http.MethodPost, "/v2/sandboxes/"+sb.SandboxID+"/connect", map[string]any{"timeout": 60}, nil); code != http.StatusOK {
		t.Errorf("POST /v2/sandboxes/{id}/connect of a running sandbox answered %d, not 200", code)
	}
	for name, opt := range map[string]map[string]any{
		"autoResume without autoPause": {"autoResume": map[string]any{"enabled": true}}, // autoPause: lifecycle_test.go
		"allow_internet_access":        {"allow_internet_access": false},
		"network":                      {"network": map[string]any{"denyOut": []string{"0.0.0.0/0"}}},
		"volumeMounts":                 {"volumeMounts": []any{map[string]any{"name": "v", "path": "/data"}}},
		"mcp":                          {"mcp": map[string]any{"github": map[string]any{}}},
		"iam":                          {"iam": map[string]any{"tokens": map[string]any{"gcp": map[string]any{"audience": "a", "tokenType": "oidc"}}}},
	} {
		opt["templateID"] = pool // api checks that a refusal is E2B's error JSON with a message
		if code := f.api(t, f.apiKey, http.MethodPost, "/v2/sandboxes", opt, nil); code != http.StatusBadRequest {
			t.Errorf("create with %s answered %d, not 400", name, code)
		}
	}
	list := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("%d claims in the namespace, want only the one created", len(list.Items))
	}
}
