package sandboxsnapshot

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// snapshotNode is a Node labelled contract.SnapshotNodeLabel at ip, Ready or not.
func snapshotNode(name, ip string, ready bool) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{contract.SnapshotNodeLabel: "true"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
}

// TestDeletingASnapshotWhoseNodeIsGone performs hole 12 of issue 36: the node that took a
// snapshot is gone, and the snapshot store still holds a copy (memory with secrets). Deleting the
// SandboxSnapshot deletes that copy through another node's kubox-node (each mounts the store; the
// nodes that fetched it then sweep theirs); with no node to ask, the finalizer waits, and goes
// after deletionGiveUp with a Warning naming what is left, never for ever.
func TestDeletingASnapshotWhoseNodeIsGone(t *testing.T) {
	for name, tc := range map[string]struct {
		stored       bool
		nodes        []client.Object
		wantDeleted  []string
		wantWaiting  bool // the first pass keeps the finalizer and asks to be retried
		wantEventFor string
	}{
		"another node deletes it from the store": {stored: true,
			nodes:       []client.Object{snapshotNode("node-b", "192.0.2.8", false), snapshotNode("node-c", "192.0.2.9", true)},
			wantDeleted: []string{"192.0.2.9 team-a/snap-uid"}},
		"no node can be asked": {stored: true, nodes: []client.Object{snapshotNode("node-b", "192.0.2.8", false)},
			wantWaiting: true, wantEventFor: "snap-uid"},
		"not in the store: it went with the node": {},
	} {
		t.Run(name, func(t *testing.T) {
			snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s1", UID: "snap-uid", Finalizers: []string{Finalizer}},
				Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "src"}},
				Status: extv1beta1.SandboxSnapshotStatus{Snapshot: &sandboxv1beta1.MemoryStatus{Snapshot: "snap-uid", NodeName: "node-gone",
					Image: "/snapshots/team-a/snap-uid/image", Stored: tc.stored}}}
			c := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(append(tc.nodes, snap)...).WithStatusSubresource(snap).Build()
			if err := c.Delete(t.Context(), snap); err != nil {
				t.Fatal(err)
			}
			nodes, rec, clk := &fakeNodes{}, events.NewFakeRecorder(10), clocktesting.NewFakePassiveClock(time.Now())
			r := NewReconciler(c, c, rec, clk, nodes)
			req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "s1"}}
			res, err := r.Reconcile(t.Context(), req)
			if err != nil || (res.RequeueAfter > 0) != tc.wantWaiting {
				t.Fatalf("Reconcile of the deleted snapshot: %+v, %v; want waiting %t", res, err, tc.wantWaiting)
			}
			if tc.wantWaiting {
				kept := &extv1beta1.SandboxSnapshot{}
				if err := c.Get(t.Context(), req.NamespacedName, kept); err != nil {
					t.Fatalf("the SandboxSnapshot while no node can delete its copy: %v; want it kept", err)
				}
				if c := meta.FindStatusCondition(kept.Status.Conditions, extv1beta1.SnapshotConditionFilesDeleted); c == nil ||
					c.Reason != extv1beta1.SnapshotReasonNoSnapshotNode || !strings.Contains(c.Message, "team-a/snap-uid is left in the snapshot store") {
					t.Errorf("FilesDeleted while no node can delete its copy: %+v; want False/NoSnapshotNode naming the copy", c)
				}
				clk.SetTime(clk.Now().Add(deletionGiveUp + time.Second))
				if _, err := r.Reconcile(t.Context(), req); err != nil {
					t.Fatalf("Reconcile after %s: %v; want the finalizer gone", deletionGiveUp, err)
				}
			}
			if err := c.Get(t.Context(), req.NamespacedName, &extv1beta1.SandboxSnapshot{}); !apierrors.IsNotFound(err) {
				t.Errorf("the SandboxSnapshot after its deletion: %v; want it gone", err)
			}
			if diff := cmp.Diff(tc.wantDeleted, nodes.deleted); diff != "" {
				t.Errorf("DeleteSnapshot calls (-want +got):\n%s", diff)
			}
			var got string
			select {
			case got = <-rec.Events:
			default:
			}
			if tc.wantEventFor != "" && (!strings.Contains(got, "Warning") || !strings.Contains(got, tc.wantEventFor)) {
				t.Errorf("event %q; want a Warning naming the snapshot left in the store", got)
			}
		})
	}
}
