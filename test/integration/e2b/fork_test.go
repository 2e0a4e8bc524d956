package e2b

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// snapshotRules is what E2B's fork and snapshot calls need on top of e2bRules (docs/e2b.md):
// SandboxSnapshots, and connect on the Sandbox a snapshot is taken of (checked at admission).
func snapshotRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxsnapshots"},
			Verbs: []string{"create", "get", "list", "watch", "delete"}},
		framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"),
	}
}

// forkResult is E2B's SandboxForkResult.
type forkResult struct {
	Sandbox *sandbox `json:"sandbox"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// claimCount is how many SandboxClaims the fixture's namespace has.
func (f *fixture) claimCount(t *testing.T) int {
	t.Helper()
	list := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestForkSurfacesTheSnapshotRefusal: sandbox.fork({count: 2}) of a sandbox whose template lets
// no claim start from a snapshot answers 400 naming the template's setting, taking nothing; once
// it does, fork snapshots the sandbox as the caller (a SandboxSnapshot of its Sandbox) before any
// fork is attempted. Here no kubox-node can
// take it, so the fork answers 409 with the controller's reason, creates no sandbox and leaves
// no SandboxSnapshot behind.
func TestForkSurfacesTheSnapshotRefusal(t *testing.T) {
	f := setup(t)
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 300})
	before := f.claimCount(t)
	var e struct {
		Message string `json:"message"`
	}
	if code := f.apiRaw(t, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/fork", map[string]any{"count": 1}, &e); code != http.StatusBadRequest ||
		!strings.Contains(e.Message, "snapshotRefPolicy to Allowed") {
		t.Errorf("fork of a sandbox whose template allows no snapshotRef answered %d %q; want 400 naming claimPolicy.snapshotRefPolicy", code, e.Message)
	}
	allowSnapshotRefs(t, f.ns, pool)
	var out []forkResult
	code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/fork", map[string]any{"count": 2, "timeout": 60}, &out)
	if code != http.StatusConflict {
		t.Fatalf("fork of a sandbox no node can snapshot answered %d, not 409", code)
	}
	if n := f.claimCount(t); n != before {
		t.Errorf("%d claims after the refused fork, want %d", n, before)
	}
	if live := f.liveSnapshots(t); len(live) != 0 {
		t.Errorf("the refused fork left SandboxSnapshots %v", live)
	}
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/fork", map[string]any{"count": 101}, nil); code != http.StatusBadRequest {
		t.Errorf("fork of 101 answered %d, not 400", code)
	}
}

// TestForksFromASnapshotAreE2BSandboxes: the forks' half of fork (startE2BForks, which fork runs
// once its snapshot is Ready) through Sandbox.create of a snapshot's ID: each fork is a
// SandboxClaim of the source's template with spec.snapshotRef, so get, list, connect and kill
// work on it as on any E2B sandbox.
func TestForksFromASnapshotAreE2BSandboxes(t *testing.T) {
	f := setup(t)
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	allowSnapshotRefs(t, f.ns, pool)
	readySnapshot(t, f.ns, "golden", pool, "e2b-source", nil)
	sb := f.create(t, map[string]any{"templateID": "golden", "timeout": 120})
	claim := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, sb.SandboxID)
	if claim.Spec.SnapshotRef == nil || claim.Spec.SnapshotRef.Name != "golden" || claim.Spec.SandboxTemplateRef == nil || claim.Spec.SandboxTemplateRef.Name != pool {
		t.Fatalf("the claim of a create from snapshot golden: snapshotRef %+v, template %+v; want golden and %s", claim.Spec.SnapshotRef, claim.Spec.SandboxTemplateRef, pool)
	}
	if sb.TemplateID != "golden" {
		t.Errorf("templateID = %q, want the snapshot's ID", sb.TemplateID)
	}
	var d detail
	if code := f.api(t, f.apiKey, http.MethodGet, "/sandboxes/"+sb.SandboxID, nil, &d); code != http.StatusOK || d.State != "running" {
		t.Errorf("get of the sandbox from a snapshot answered %d %+v", code, d)
	}
	f.checkListed(t, "", sb.SandboxID, true)
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/connect", map[string]int{"timeout": 60}, nil); code != http.StatusOK {
		t.Errorf("connect answered %d, not 200", code)
	}
	if code := f.api(t, f.apiKey, http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil, nil); code != http.StatusNoContent {
		t.Errorf("kill answered %d, not 204", code)
	}
}

// TestSnapshotOfAnotherClaimIsRefused is the attack of the snapshot claim rule through E2B: a
// snapshot that holds claim alice's env (a Full snapshot of a sandbox created with envVars)
// never starts another E2B sandbox (a claim of its own). Sandbox.create from it answers E2B's
// error with the reason and the fix (ClaimSettingsRefusal), and creates nothing.
func TestSnapshotOfAnotherClaimIsRefused(t *testing.T) {
	f := setup(t)
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	allowSnapshotRefs(t, f.ns, pool)
	readySnapshot(t, f.ns, "alices", pool, "e2b-alice", map[string]any{"name": "e2b-alice", "uid": "alice-uid", "env": true})
	before := f.claimCount(t)
	var e struct {
		Message string `json:"message"`
	}
	code := f.apiRaw(t, http.MethodPost, "/sandboxes", map[string]any{"templateID": "alices"}, &e)
	if code != http.StatusConflict || !strings.Contains(e.Message, "holds the spec.env of SandboxClaim e2b-alice") {
		t.Errorf("create from a snapshot holding alice's env answered %d %q; want 409 naming the refusal", code, e.Message)
	}
	if n := f.claimCount(t); n != before {
		t.Errorf("%d claims after the refused create, want %d", n, before)
	}
}

// apiRaw calls E2B's control API with the fixture's key and decodes the answer, an error's
// too, into out.
func (f *fixture) apiRaw(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(t.Context(), method, "http://api."+domain+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(contract.E2BAPIKeyHeader, f.apiKey)
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = res.Body.Close() }()
	raw, _ := io.ReadAll(res.Body)
	t.Logf("%s %s: %d %s", method, path, res.StatusCode, raw)
	if out != nil {
		_ = json.Unmarshal(raw, out)
	}
	return res.StatusCode
}

// allowSnapshotRefs lets claims of template name start from any SandboxSnapshot (E2B's fork and
// create from a snapshot need it: docs/e2b.md).
func allowSnapshotRefs(t *testing.T, ns, name string) {
	t.Helper()
	tpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := []byte(`{"spec":{"claimPolicy":{"snapshotRefPolicy":"Allowed"}}}`)
	if err := env.Client.Patch(t.Context(), tpl, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("allowing snapshotRefs on SandboxTemplate %s: %v", name, err)
	}
}

// readySnapshot creates SandboxSnapshot name as E2B's createSnapshot leaves it (its template and
// source sandbox ID in labels) and writes the status kubox-node and the controller write once it
// is taken (there is no node here), held settings sourceClaim.
func readySnapshot(t *testing.T, ns, name, template, sandboxID string, sourceClaim map[string]any) {
	t.Helper()
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"e2b.kubox.dev/template": template, "e2b.kubox.dev/sandbox-id": sandboxID}},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: sandboxID + "-gone"}}}
	env.Create(t, snap)
	status := map[string]any{
		"conditions": []map[string]any{{"type": extv1beta1.SnapshotConditionReady, "status": "True", "reason": extv1beta1.SnapshotReasonTaken,
			"message": "taken", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
		"snapshot": map[string]any{"snapshot": "snap-uid", "nodeName": "node-a", "image": "/snapshots/" + ns + "/snap-uid/image",
			"sizeBytes": 1 << 20, "duration": "1s"},
		"sourcePodUID": "pod-uid",
		"sourceClaim":  sourceClaim,
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Patch(t.Context(), snap, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("writing the status of SandboxSnapshot %s: %v", name, err)
	}
}

// liveSnapshots names the namespace's SandboxSnapshots not being deleted.
func (f *fixture) liveSnapshots(t *testing.T) []string {
	t.Helper()
	snaps := &extv1beta1.SandboxSnapshotList{}
	if err := env.Client.List(t.Context(), snaps, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, s := range snaps.Items {
		if s.DeletionTimestamp == nil {
			live = append(live, s.Name)
		}
	}
	return live
}
