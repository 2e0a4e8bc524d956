package e2b

import (
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
)

// snapshotInfo is E2B's SnapshotInfo.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

// TestSnapshots: createSnapshot takes a SandboxSnapshot of the sandbox as the caller and, when
// it cannot be taken (no kubox-node here), answers 409 with the controller's reason and leaves
// none; listSnapshots lists the namespace's SandboxSnapshots (filtered by sandboxID and name);
// deleteSnapshot (DELETE /templates/{snapshotID}) deletes one, 404 when there is none.
func TestSnapshots(t *testing.T) {
	f := setup(t)
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 300})
	var e struct {
		Message string `json:"message"`
	}
	if code := f.apiRaw(t, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/snapshots", map[string]any{"name": "mine"}, &e); code != http.StatusConflict ||
		!strings.Contains(e.Message, extv1beta1.SnapshotReasonCheckpointFailed) {
		t.Errorf("createSnapshot with no node answered %d %q; want 409 with the controller's reason", code, e.Message)
	}
	if live := f.liveSnapshots(t); len(live) != 0 {
		t.Errorf("the refused createSnapshot left SandboxSnapshots %v", live)
	}
	readySnapshot(t, f.ns, "first", pool, sb.SandboxID, nil)
	readySnapshot(t, f.ns, "second", pool, "e2b-other", nil)
	for query, want := range map[string][]string{
		"":                           {"first", "second"},
		"?sandboxID=" + sb.SandboxID: {"first"},
		"?name=second":               {"second"},
		"?name=none":                 nil,
	} {
		var got []snapshotInfo
		if code := f.api(t, f.apiKey, http.MethodGet, "/snapshots"+query, nil, &got); code != http.StatusOK {
			t.Errorf("listSnapshots%s answered %d", query, code)
			continue
		}
		var ids []string
		for _, s := range got {
			ids = append(ids, s.SnapshotID)
			if !slices.Equal(s.Names, []string{s.SnapshotID}) {
				t.Errorf("snapshot %s has names %v, want its ID", s.SnapshotID, s.Names)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want) {
			t.Errorf("listSnapshots%s = %v, want %v", query, ids, want)
		}
	}
	if code := f.api(t, f.apiKey, http.MethodDelete, "/templates/first", nil, nil); code != http.StatusNoContent {
		t.Errorf("deleteSnapshot answered %d, not 204", code)
	}
	if live := f.liveSnapshots(t); !slices.Equal(live, []string{"second"}) {
		t.Errorf("SandboxSnapshots after deleting first: %v, want second", live)
	}
	if code := f.api(t, f.apiKey, http.MethodDelete, "/templates/no-such", nil, nil); code != http.StatusNotFound {
		t.Errorf("deleting a snapshot that does not exist answered %d, not 404", code)
	}
}

// TestSnapshotAndForkAttacks: with every E2B caller's sandboxes in one namespace, a key whose
// ServiceAccount has E2B's sandbox rights but none on sandboxsnapshots, and a key of a tenant of
// another namespace (all rights there, none here), get 403 for fork, createSnapshot,
// listSnapshots, deleteSnapshot and metrics of this tenant's sandbox and snapshot; nothing of
// this namespace changes.
func TestSnapshotAndForkAttacks(t *testing.T) {
	// Every caller's sandboxes in the one namespace (--e2b-namespace): RBAC alone decides.
	f := setup(t, func(c *router.Config) { c.E2BNamespace = c.Namespace })
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	allowSnapshotRefs(t, f.ns, pool)
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 300})
	readySnapshot(t, f.ns, "golden", pool, sb.SandboxID, nil)

	env.Grant(t, f.ns, "no-snapshots", "e2b-no-snapshots", e2bRules()...)
	noSnap := contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(env.ServiceAccountToken(t, f.ns, "no-snapshots")))
	other := env.NewNamespace(t)
	env.Grant(t, other, user, "e2b", append(e2bRules(), snapshotRules()...)...)
	tenant := contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(env.ServiceAccountToken(t, other, user)))
	for name, key := range map[string]string{"no RBAC on sandboxsnapshots": noSnap, "another namespace's tenant": tenant} {
		for _, op := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPost, "/sandboxes/" + sb.SandboxID + "/fork", map[string]any{"count": 1}},
			{http.MethodPost, "/sandboxes/" + sb.SandboxID + "/snapshots", map[string]any{}},
			{http.MethodGet, "/snapshots", nil},
			{http.MethodDelete, "/templates/golden", nil},
		} {
			if code := f.api(t, key, op.method, op.path, op.body, nil); code != http.StatusForbidden {
				t.Errorf("%s: %s %s answered %d, not 403", name, op.method, op.path, code)
			}
		}
	}
	if code := f.api(t, tenant, http.MethodGet, "/sandboxes/"+sb.SandboxID+"/metrics", nil, nil); code != http.StatusForbidden {
		t.Errorf("another namespace's tenant: metrics answered %d, not 403", code)
	}
	if live := f.liveSnapshots(t); !slices.Equal(live, []string{"golden"}) {
		t.Errorf("SandboxSnapshots after the attacks: %v; want golden, not deleted", live)
	}
	if n := f.claimCount(t); n != 1 {
		t.Errorf("%d claims after the attacks, want the one created", n)
	}
}
