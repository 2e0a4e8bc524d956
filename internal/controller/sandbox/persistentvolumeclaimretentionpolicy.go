package sandbox

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// RetainPVCsFinalizer holds a Sandbox whose persistentVolumeClaimRetentionPolicy.whenDeleted is
// Retain until its PVCs are released (their owner reference removed), so the garbage collector
// leaves them when the Sandbox goes.
const RetainPVCsFinalizer = "kubox.dev/retain-pvcs"

// retainPVCsWhenDeleted reports whether sb's PVCs must outlive it.
func retainPVCsWhenDeleted(sb *sandboxv1beta1.Sandbox) bool {
	p := sb.Spec.PersistentVolumeClaimRetentionPolicy
	return p != nil && p.WhenDeleted == sandboxv1beta1.RetainPersistentVolumeClaimRetentionPolicyType &&
		len(sb.Spec.VolumeClaimTemplates) > 0
}

// syncRetentionFinalizer adds the finalizer when the policy asks to retain PVCs and removes it
// when it no longer does. Sandboxes without that policy never get it, so they cost no write.
func (r *Reconciler) syncRetentionFinalizer(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	return r.setFinalizer(ctx, sb, RetainPVCsFinalizer, retainPVCsWhenDeleted(sb))
}

// setFinalizer adds finalizer to sb, or removes it, with one patch when that changes anything.
func (r *Reconciler) setFinalizer(ctx context.Context, sb *sandboxv1beta1.Sandbox, finalizer string, want bool) error {
	if want == controllerutil.ContainsFinalizer(sb, finalizer) {
		return nil
	}
	base := sb.DeepCopy()
	if want {
		controllerutil.AddFinalizer(sb, finalizer)
	} else {
		controllerutil.RemoveFinalizer(sb, finalizer)
	}
	if err := r.client.Patch(ctx, sb, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("updating the finalizers of Sandbox %s: %w", sb.Name, err)
	}
	r.sandboxes.Wrote(sb.UID, base.ResourceVersion)
	return nil
}

// finalize runs while sb is being deleted: it deletes its memory snapshot and releases the PVCs
// to retain, then lets sb go.
func (r *Reconciler) finalize(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	if controllerutil.ContainsFinalizer(sb, MemorySnapshotFinalizer) {
		if err := r.deleteMemorySnapshot(ctx, sb); err != nil {
			return err
		}
	}
	if !controllerutil.ContainsFinalizer(sb, RetainPVCsFinalizer) {
		return nil
	}
	pvcs, err := r.ownedPVCs(ctx, sb)
	if err != nil {
		return err
	}
	for _, pvc := range pvcs {
		base := pvc.DeepCopy()
		pvc.OwnerReferences = withoutOwner(pvc.OwnerReferences, sb)
		if err := r.client.Patch(ctx, pvc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("releasing PersistentVolumeClaim %s of Sandbox %s: %w", pvc.Name, sb.Name, err)
		}
	}
	return r.setFinalizer(ctx, sb, RetainPVCsFinalizer, false)
}

func withoutOwner(refs []metav1.OwnerReference, owner metav1.Object) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, ref := range refs {
		if ref.UID != owner.GetUID() {
			out = append(out, ref)
		}
	}
	return out
}
