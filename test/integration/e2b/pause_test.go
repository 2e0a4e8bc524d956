package e2b

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// sandboxOf reads the Sandbox of E2B sandbox id (its claim's status.sandbox).
func (f *fixture) sandboxOf(t *testing.T, id string) *sandboxv1beta1.Sandbox {
	t.Helper()
	cl := &extv1beta1.SandboxClaim{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: id}, cl); err != nil {
		t.Fatalf("reading SandboxClaim %s: %v", id, err)
	}
	sb := &sandboxv1beta1.Sandbox{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: cl.Status.Sandbox.Name}, sb); err != nil {
		t.Fatalf("reading Sandbox %s: %v", cl.Status.Sandbox.Name, err)
	}
	return sb
}

// TestPauseNeverDropsTheFilesystem: E2B's pause keeps the sandbox's files (and by default its
// memory). kubox's pause first takes a Filesystem SandboxSnapshot of the running sandbox, as the
// caller, and suspends only once it is Ready. Here no kubox-node can take it, so every pause
// (memory default, keepMemory true, keepMemory false) answers 400 naming the controller's reason
// and what to configure, and the sandbox goes on running: no pause drops /tmp. No snapshot is
// left behind.
func TestPauseNeverDropsTheFilesystem(t *testing.T) {
	f := setup(t)
	env.Grant(t, f.ns, user, "e2b-snapshots", snapshotRules()...)
	for name, body := range map[string]any{
		"default (memory)": nil,
		"keepMemory true":  map[string]any{"memory": true},
		"keepMemory false": map[string]any{"memory": false},
	} {
		sb := f.create(t, map[string]any{"templateID": cold, "timeout": 300})
		var e struct {
			Message string `json:"message"`
		}
		code := f.apiRaw(t, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/pause", body, &e)
		if code != http.StatusBadRequest || !strings.Contains(e.Message, extv1beta1.SnapshotReasonCheckpointFailed) ||
			!strings.Contains(e.Message, "runsc") {
			t.Errorf("%s: pause with no node to keep the files answered %d %q; want 400 naming %s and what to configure",
				name, code, e.Message, extv1beta1.SnapshotReasonCheckpointFailed)
		}
		if s := f.sandboxOf(t, sb.SandboxID); s.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
			t.Errorf("%s: the refused pause suspended Sandbox %s: its files outside volumes are lost", name, s.Name)
		}
	}
	if live := f.liveSnapshots(t); len(live) != 0 {
		t.Errorf("the refused pauses left SandboxSnapshots %v", live)
	}
}

// TestPauseIsTheCallers: pause's snapshot and suspend are the caller's writes, so RBAC decides.
// A key whose ServiceAccount has E2B's sandbox rights but none on sandboxsnapshots gets 403, and
// another namespace's tenant is refused too; the sandbox goes on running, no snapshot is taken.
func TestPauseIsTheCallers(t *testing.T) {
	f := setup(t)
	sb := f.create(t, map[string]any{"templateID": pool, "timeout": 300})
	env.Grant(t, f.ns, "no-snapshots", "e2b-no-snapshots", e2bRules()...)
	noSnap := contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(env.ServiceAccountToken(t, f.ns, "no-snapshots")))
	other := env.NewNamespace(t)
	env.Grant(t, other, user, "e2b", append(e2bRules(), snapshotRules()...)...)
	tenant := contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(env.ServiceAccountToken(t, other, user)))
	for name, key := range map[string]string{"no RBAC on sandboxsnapshots": noSnap, "another namespace's tenant": tenant} {
		// The router serves one namespace: another's tenant is refused before any write (404).
		if code := f.api(t, key, http.MethodPost, "/sandboxes/"+sb.SandboxID+"/pause", nil, nil); code != http.StatusForbidden && code != http.StatusNotFound {
			t.Errorf("%s: pause answered %d, not 403 or 404", name, code)
		}
	}
	if s := f.sandboxOf(t, sb.SandboxID); s.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended || s.Spec.SnapshotRef != nil {
		t.Errorf("after the refused pauses Sandbox %s is %q with snapshotRef %v", s.Name, s.Spec.OperatingMode, s.Spec.SnapshotRef)
	}
	if live := f.liveSnapshots(t); len(live) != 0 {
		t.Errorf("the refused pauses left SandboxSnapshots %v", live)
	}
}

// suspendSandbox sets Sandbox ns/name Suspended as an administrator and waits until its Pod is
// gone: a paused sandbox, for the tests of resume and connect (no node here takes pause's
// snapshot).
func suspendSandbox(t *testing.T, ns, name string) {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := []byte(`{"spec":{"operatingMode":"Suspended"}}`)
	if err := env.Client.Patch(t.Context(), sb, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("suspending Sandbox %s: %v", name, err)
	}
	framework.WaitFor(t, framework.DefaultTimeout, func() (bool, string) {
		got := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
		done, _ := sandboxv1beta1.SandboxSuspension(got)
		return done, "Sandbox " + name + " not suspended yet"
	})
}
