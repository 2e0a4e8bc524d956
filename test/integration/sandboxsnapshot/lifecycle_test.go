package sandboxsnapshot

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestDeletingASnapshotDeletesItsCopies: deleting a SandboxSnapshot deletes its folder on its
// node and its copy in the snapshot store, through kubox-node, then lets the object go.
func TestDeletingASnapshotDeletesItsCopies(t *testing.T) {
	t.Parallel()
	ns, n := env.NewNamespace(t), startKuboxNode(t)
	startController(t, n, ns)
	node(t, ns+"-a")
	s := create(t, makeSnapshot(ns, "snap", "src").withFinalizer(), ns+"-a", "", true)
	dirs := n.copies(t, ns, string(s.UID))
	if err := env.Client.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, s)
	if left := exist(dirs); len(left) > 0 {
		t.Errorf("copies left after the SandboxSnapshot is gone: %v", left)
	}
}

// TestDeletingASnapshotWhoseNodeIsGoneSaysWhatIsLeft: the node that took a stored snapshot is
// gone and no other kubox-node can reach the store: the SandboxSnapshot stays, being deleted,
// with FilesDeleted=False/NoSnapshotNode naming the copy left and why; once a snapshot node is
// there, its kubox-node deletes the store's copy and the object goes.
func TestDeletingASnapshotWhoseNodeIsGoneSaysWhatIsLeft(t *testing.T) {
	// Not parallel: it depends on no Node labelled as a snapshot node existing.
	ns, n := env.NewNamespace(t), startKuboxNode(t)
	startController(t, n, ns)
	s := create(t, makeSnapshot(ns, "snap", "src").withFinalizer(), ns+"-gone", "", true)
	dirs := n.copies(t, ns, string(s.UID))
	if err := env.Client.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, s, extv1beta1.SnapshotConditionFilesDeleted, extv1beta1.SnapshotReasonNoSnapshotNode,
		fmt.Sprintf("node %s-gone, which took the snapshot, is gone", ns))
	if left := exist(dirs[1:]); len(left) != 1 {
		t.Fatalf("the store's copy while no node can delete it: %v; want it there", left)
	}
	node(t, ns+"-b")
	env.WaitGone(t, s)
	if left := exist(dirs[1:]); len(left) > 0 {
		t.Errorf("the store's copy after the SandboxSnapshot is gone: %v", left)
	}
}

// TestDeletingNeverReachesAnotherNamespace performs the attack of a tenant who writes a
// SandboxSnapshot's status (or has it written) to name another namespace's snapshot, or a name
// crafted to leave its folder: deleting it deletes only what its own namespace holds under that
// name; the other namespace's copies stay, and a name that is not a DNS label is refused by
// kubox-node and the store, the condition saying so.
func TestDeletingNeverReachesAnotherNamespace(t *testing.T) {
	t.Parallel()
	victim, tenant, n := env.NewNamespace(t), env.NewNamespace(t), startKuboxNode(t)
	startController(t, n, tenant, victim)
	node(t, tenant+"-a")
	theirs := create(t, makeSnapshot(victim, "theirs", "src").withFinalizer(), tenant+"-a", "", true)
	keep := n.copies(t, victim, string(theirs.UID))
	for name, snapshot := range map[string]string{
		"the victim's snapshot name":  string(theirs.UID),
		"a name with path characters": "../../" + string(theirs.UID)[:8],
	} {
		s := create(t, makeSnapshot(tenant, strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), "'", ""), "src").withFinalizer(),
			tenant+"-a", snapshot, true)
		if err := env.Client.Delete(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(snapshot, "/") {
			waitForCondition(t, s, extv1beta1.SnapshotConditionFilesDeleted, extv1beta1.SnapshotReasonDeleteFailed, "RFC 1123 label")
		} else {
			env.WaitGone(t, s)
		}
		if left := exist(keep); len(left) != 2 {
			t.Fatalf("%s: the victim's copies after the tenant's SandboxSnapshot was deleted: %v; want both", name, left)
		}
	}
}

// TestRetentionKeepsTheNewestSnapshotsOfASandbox: with spec.retention.maxCount 2 on each, a third
// Ready snapshot of the same Sandbox deletes the oldest (and its copies); snapshots of another
// Sandbox, and of a Sandbox of the same name in another namespace, count for nothing.
func TestRetentionKeepsTheNewestSnapshotsOfASandbox(t *testing.T) {
	t.Parallel()
	ns, other, n := env.NewNamespace(t), env.NewNamespace(t), startKuboxNode(t)
	startController(t, n, ns, other)
	node(t, ns+"-a")
	var dirs [][]string
	var oldest *extv1beta1.SandboxSnapshot
	for i := range 2 {
		s := create(t, makeSnapshot(ns, fmt.Sprintf("src-%d", i), "src").withFinalizer().maxCount(2), ns+"-a", "", true)
		dirs = append(dirs, n.copies(t, ns, string(s.UID)))
		if i == 0 {
			oldest = s
		}
	}
	// Newer snapshots elsewhere: another Sandbox, and "src" of another namespace.
	create(t, makeSnapshot(ns, "other-0", "other").withFinalizer().maxCount(2), ns+"-a", "", true)
	for i := range 3 {
		create(t, makeSnapshot(other, fmt.Sprintf("src-%d", i), "src").withFinalizer(), ns+"-a", "", true)
	}
	framework.Consistently(t, 3*time.Second, func() (bool, string) {
		got := names(t, ns)
		return cmp.Equal(got, []string{"other-0", "src-0", "src-1"}), fmt.Sprintf("snapshots of %s: %v", ns, got)
	})
	// Created after the others, or in the same second with a later name (extv1beta1.TakenBefore).
	create(t, makeSnapshot(ns, "src-2", "src").withFinalizer().maxCount(2), ns+"-a", "", true)
	framework.Eventually(t, func() (bool, string) {
		got := names(t, ns)
		return cmp.Equal(got, []string{"other-0", "src-1", "src-2"}), fmt.Sprintf("snapshots of %s: %v; want src-0 deleted", ns, got)
	})
	env.WaitGone(t, oldest) // its finalizer has deleted its files
	if left := exist(dirs[0]); len(left) > 0 {
		t.Errorf("copies of src-0, outside its retention: %v; want them deleted", left)
	}
	if got := names(t, other); len(got) != 3 {
		t.Errorf("snapshots of %s: %v; want all three (no retention there)", other, got)
	}
}

func names(t *testing.T, ns string) []string {
	t.Helper()
	l := &extv1beta1.SandboxSnapshotList{}
	if err := env.Client.List(t.Context(), l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range l.Items {
		if s.DeletionTimestamp == nil {
			out = append(out, s.Name)
		}
	}
	return out
}

// TestRetentionIsValidatedAtAdmission: a retention without a bound, an age under a minute or a
// count of zero is refused with a message naming the field; sandboxRef and type stay immutable,
// and retention may change.
func TestRetentionIsValidatedAtAdmission(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	for name, tc := range map[string]struct {
		retention *extv1beta1.SnapshotRetention
		wantErr   string
	}{
		"no bound":          {retention: &extv1beta1.SnapshotRetention{}, wantErr: "spec.retention needs maxAge, maxCount or both"},
		"an age of seconds": {retention: &extv1beta1.SnapshotRetention{MaxAge: &metav1.Duration{Duration: 30 * time.Second}}, wantErr: "spec.retention.maxAge must be a duration from 1m to 87600h"},
		"a count of zero":   {retention: &extv1beta1.SnapshotRetention{MaxCount: ptr.To[int32](0)}, wantErr: "spec.retention.maxCount"},
		"a day":             {retention: &extv1beta1.SnapshotRetention{MaxAge: &metav1.Duration{Duration: 24 * time.Hour}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := makeSnapshot(ns, strings.ReplaceAll(name, " ", "-"), "src").obj()
			s.Spec.Retention = tc.retention
			err := env.Client.Create(t.Context(), s)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Creating a SandboxSnapshot with retention %+v: %v; want it accepted", tc.retention, err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Creating a SandboxSnapshot with retention %+v: %v; want Invalid saying %q", tc.retention, err, tc.wantErr)
			}
		})
	}
	s := makeSnapshot(ns, "mutable", "src").obj()
	env.Create(t, s)
	if err := env.Client.Patch(t.Context(), s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"retention":{"maxCount":3}}}`))); err != nil {
		t.Errorf("Setting spec.retention of a SandboxSnapshot: %v; want it allowed", err)
	}
	err := env.Client.Patch(t.Context(), s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"sandboxRef":{"name":"another"}}}`)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable except spec.retention") {
		t.Errorf("Changing spec.sandboxRef: %v; want Invalid saying it is immutable", err)
	}
}

// TestATenantCannotWriteStatus performs the attack of a tenant allowed every verb on
// sandboxsnapshots but not on their status (what a namespace's edit role gives): writing
// status.snapshot to point the finalizer at another snapshot is ignored through the object and
// forbidden through the status subresource, so what the finalizer deletes is only what the
// controller recorded.
func TestATenantCannotWriteStatus(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	tok := env.ServiceAccountToken(t, ns, "tenant")
	env.Grant(t, ns, "tenant", "snapshots", rbacv1.PolicyRule{APIGroups: []string{extv1beta1.GroupVersion.Group},
		Resources: []string{"sandboxsnapshots"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		framework.ConnectRule("agents.x-k8s.io", "sandboxes"))
	tenant, err := client.New(env.ConfigFor(tok), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	s := makeSnapshot(ns, "mine", "src").obj()
	if err := tenant.Create(t.Context(), s); err != nil {
		t.Fatalf("The tenant creating a SandboxSnapshot: %v", err)
	}
	forged := &sandboxv1beta1.MemoryStatus{Snapshot: "someone-elses", NodeName: "node-a", Image: "/x", Stored: true}
	s.Status.Snapshot = forged
	if err := tenant.Update(t.Context(), s); err != nil {
		t.Fatalf("The tenant updating its SandboxSnapshot: %v", err)
	}
	if got := framework.Read[extv1beta1.SandboxSnapshot](t, env, ns, "mine"); got.Status.Snapshot != nil {
		t.Errorf("status.snapshot after the tenant's update of the object: %+v; want it ignored", got.Status.Snapshot)
	}
	s.Status.Snapshot = forged
	if err := tenant.Status().Update(t.Context(), s); !apierrors.IsForbidden(err) {
		t.Errorf("The tenant updating the status subresource: %v; want Forbidden", err)
	}
}
