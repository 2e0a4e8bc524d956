package sandboxsnapshot

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// retain deletes snap once it falls outside its spec.retention (extv1beta1.RetentionCheck), with
// a RetentionExpired event; otherwise it returns how long until its maxAge passes (zero: no
// need to look again for it). The deletion goes through the finalizer, which deletes its files.
// A snapshot's retention deletes that snapshot only, and counts only the snapshots of its own
// namespace.
func (r *Reconciler) retain(ctx context.Context, snap *extv1beta1.SandboxSnapshot) (deleted bool, next time.Duration, err error) {
	if snap.Spec.Retention == nil {
		return false, 0, nil
	}
	newer := 0
	if snap.Spec.Retention.MaxCount != nil {
		if newer, err = r.newerReady(ctx, snap); err != nil {
			return false, 0, err
		}
	}
	expired, why, next := extv1beta1.RetentionCheck(snap, r.clock.Now(), newer)
	if !expired {
		return false, next, nil
	}
	err = r.client.Delete(ctx, snap, client.Preconditions{UID: &snap.UID, ResourceVersion: &snap.ResourceVersion})
	if apierrors.IsNotFound(err) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("deleting SandboxSnapshot %s, outside its spec.retention (%s): %w", snap.Name, why, err)
	}
	ctrl.LoggerFrom(ctx).Info("Deleted a snapshot outside its retention", "why", why)
	r.recorder.Eventf(snap, nil, corev1.EventTypeNormal, EventRetentionExpired, "Delete",
		"Deleted SandboxSnapshot %s, outside its spec.retention: %s", snap.Name, why)
	return true, 0, nil
}

// newerReady counts the Ready snapshots of snap's Sandbox, in its namespace and not being
// deleted, created after it (extv1beta1.TakenBefore).
func (r *Reconciler) newerReady(ctx context.Context, snap *extv1beta1.SandboxSnapshot) (int, error) {
	list := &extv1beta1.SandboxSnapshotList{}
	if err := r.client.List(ctx, list, client.InNamespace(snap.Namespace)); err != nil {
		return 0, fmt.Errorf("listing the SandboxSnapshots of namespace %s for the retention of %s: %w", snap.Namespace, snap.Name, err)
	}
	n := 0
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID != snap.UID && o.DeletionTimestamp == nil && o.Spec.SandboxRef.Name == snap.Spec.SandboxRef.Name &&
			meta.IsStatusConditionTrue(o.Status.Conditions, extv1beta1.SnapshotConditionReady) && extv1beta1.TakenBefore(snap, o) {
			n++
		}
	}
	return n, nil
}

// countedWith maps a SandboxSnapshot to the snapshots of the same Sandbox in its namespace whose
// spec.retention.maxCount counts it: a snapshot becoming Ready can push an older one out.
func (r *Reconciler) countedWith(ctx context.Context, obj client.Object) []ctrl.Request {
	snap, ok := obj.(*extv1beta1.SandboxSnapshot)
	if !ok {
		return nil
	}
	list := &extv1beta1.SandboxSnapshotList{}
	if err := r.client.List(ctx, list, client.InNamespace(snap.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the snapshots whose retention counts a snapshot", "snapshot", klog.KObj(snap))
		return nil
	}
	var out []ctrl.Request
	for _, o := range list.Items {
		if o.UID != snap.UID && o.Spec.SandboxRef.Name == snap.Spec.SandboxRef.Name && o.Spec.Retention != nil && o.Spec.Retention.MaxCount != nil {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&o)})
		}
	}
	return out
}
