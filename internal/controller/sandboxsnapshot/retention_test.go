package sandboxsnapshot

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
)

// TestRetentionByAge: a snapshot with spec.retention.maxAge is looked at again when its age
// reaches maxAge, and then deleted (its finalizer deletes its files), with a RetentionExpired
// event saying why. It runs on the controller's clock, so the test moves the clock.
func TestRetentionByAge(t *testing.T) {
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s1", UID: "snap-uid",
		CreationTimestamp: metav1.NewTime(now)},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "src"},
			Retention: &extv1beta1.SnapshotRetention{MaxAge: &metav1.Duration{Duration: time.Hour}}},
		Status: extv1beta1.SandboxSnapshotStatus{Conditions: []metav1.Condition{{Type: extv1beta1.SnapshotConditionReady,
			Status: metav1.ConditionTrue, Reason: extv1beta1.SnapshotReasonTaken}}}}
	c := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(snap).WithStatusSubresource(snap).
		WithIndex(&corev1.Pod{}, indexer.RestoreImageKey, indexer.RestoreImage).Build()
	rec, clk := events.NewFakeRecorder(10), clocktesting.NewFakePassiveClock(now.Add(20*time.Minute))
	r := NewReconciler(c, c, rec, clk, &fakeNodes{})
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "s1"}}
	res, err := r.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter != 40*time.Minute {
		t.Fatalf("Reconcile 20 minutes in: %+v, %v; want it looked at again in 40m", res, err)
	}
	clk.SetTime(now.Add(time.Hour))
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatalf("Reconcile an hour in: %v", err)
	}
	if err := c.Get(t.Context(), req.NamespacedName, &extv1beta1.SandboxSnapshot{}); !apierrors.IsNotFound(err) {
		t.Errorf("the SandboxSnapshot an hour in: %v; want it deleted", err)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, EventRetentionExpired) || !strings.Contains(e, "spec.retention.maxAge is 1h0m0s") {
			t.Errorf("event %q; want RetentionExpired saying why", e)
		}
	default:
		t.Error("no event; want RetentionExpired")
	}
}

// storedNodes is kubox-node with an S3 snapshot store: its answers say where the copy is.
type storedNodes struct{ fakeNodes }

func (f *storedNodes) Checkpoint(ctx context.Context, hostIP string, req *nodev1.CheckpointRequest) (*nodev1.Snapshot, error) {
	s, err := f.fakeNodes.Checkpoint(ctx, hostIP, req)
	s.Stored, s.StoreKind, s.StoreLocation = true, "S3", "s3://s3.example.com/snaps/cluster-a/snapshots/team-a/"+req.GetSnapshot()
	return s, err
}

// TestStatusSaysWhereTheSnapshotIs: status.store and status.nodes come from kubox-node's answer:
// the store's kind and location, and the node that holds the snapshot.
func TestStatusSaysWhereTheSnapshotIs(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes     nodeapi.Client
		wantStore *extv1beta1.SnapshotStore
	}{
		"stored in S3": {nodes: &storedNodes{}, wantStore: &extv1beta1.SnapshotStore{Kind: extv1beta1.SnapshotStoreS3,
			Location: "s3://s3.example.com/snaps/cluster-a/snapshots/team-a/snap-uid"}},
		"on its node only": {nodes: &fakeNodes{}},
	} {
		t.Run(name, func(t *testing.T) {
			r, c := world(t, tc.nodes, true)
			reconcile(t, r)
			s := read(t, c)
			if diff := cmp.Diff(tc.wantStore, s.Status.Store); diff != "" {
				t.Errorf("status.store (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"node-a"}, s.Status.Nodes); diff != "" {
				t.Errorf("status.nodes (-want +got):\n%s", diff)
			}
		})
	}
}
