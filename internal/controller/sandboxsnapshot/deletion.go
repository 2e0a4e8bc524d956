package sandboxsnapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/controller/status"
)

// deletionRetry is how soon the files of a deleted SandboxSnapshot that could not be deleted are
// tried again (a snapshot node may come back, or another be labelled).
const deletionRetry = 10 * time.Second

// finalize deletes the snapshot's files from its node, every node's cache and the snapshot store,
// then lets the SandboxSnapshot go. While they cannot be deleted, FilesDeleted=False says which
// copy is left and why, and the pass is tried again after deletionRetry.
func (r *Reconciler) finalize(ctx context.Context, snap *extv1beta1.SandboxSnapshot) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(snap, Finalizer) {
		return ctrl.Result{}, nil
	}
	if s := snap.Status.Snapshot; s != nil {
		left, err := r.deleteFiles(ctx, snap, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if left != nil {
			return ctrl.Result{RequeueAfter: deletionRetry}, r.setFilesLeft(ctx, snap, s, left)
		}
	}
	base := snap.DeepCopy()
	controllerutil.RemoveFinalizer(snap, Finalizer)
	if err := r.client.Patch(ctx, snap, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager)); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of SandboxSnapshot %s: %w", snap.Name, err)
	}
	return ctrl.Result{}, nil
}

// deleteFiles deletes the snapshot's files from its node and from the snapshot store
// (nodeapi.DeleteEverywhere): once its node is gone, through another node's kubox-node, and every
// node that fetched a copy removes its own once the store no longer holds it. It returns why
// files are left, nil once they are deleted. When the node is gone and none can delete the
// store's copy for deletionGiveUp, it gives up with a Warning event naming the copy left behind:
// a finalizer never holds a SandboxSnapshot for ever.
func (r *Reconciler) deleteFiles(ctx context.Context, snap *extv1beta1.SandboxSnapshot, s *sandboxv1beta1.MemoryStatus) (left error, err error) {
	left = nodeapi.DeleteEverywhere(ctx, r.apiReader, r.nodes, snap.Namespace, s)
	if left == nil {
		return nil, nil
	}
	if !errors.Is(left, nodeapi.ErrNoSnapshotNode) || r.clock.Since(snap.DeletionTimestamp.Time) < deletionGiveUp {
		return left, nil
	}
	r.recorder.Eventf(snap, nil, corev1.EventTypeWarning, EventFilesNotDeleted, "Delete",
		"Gave up deleting snapshot %s from the snapshot store after %s: %v. Delete the folder %s/%s of the store by hand",
		s.Snapshot, deletionGiveUp, left, snap.Namespace, s.Snapshot)
	return nil, nil
}

// setFilesLeft records FilesDeleted=False: which copy of the snapshot is left, where, and why.
func (r *Reconciler) setFilesLeft(ctx context.Context, snap *extv1beta1.SandboxSnapshot, s *sandboxv1beta1.MemoryStatus, left error) error {
	reason, where := extv1beta1.SnapshotReasonDeleteFailed, fmt.Sprintf("on node %s and in the snapshot store", s.NodeName)
	if errors.Is(left, nodeapi.ErrNoSnapshotNode) {
		reason, where = extv1beta1.SnapshotReasonNoSnapshotNode, "in the snapshot store"
		if snap.Status.Store != nil {
			where = "in the snapshot store at " + snap.Status.Store.Location
		}
	}
	msg := fmt.Sprintf("Snapshot %s/%s is left %s: %v. kubox-controller tries again every %s", snap.Namespace, s.Snapshot, where, left, deletionRetry)
	if reason == extv1beta1.SnapshotReasonNoSnapshotNode {
		msg += fmt.Sprintf(" for %s after the deletion, then gives up; label a Ready node whose kubox-node reaches the store %s=true",
			deletionGiveUp, contract.SnapshotNodeLabel)
	}
	want := *snap.Status.DeepCopy()
	meta.SetStatusCondition(&want.Conditions, metav1.Condition{Type: extv1beta1.SnapshotConditionFilesDeleted, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, ObservedGeneration: snap.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now())})
	_, err := status.WriteNow(ctx, r.status, snap, &snap.Status, want)
	return err
}
