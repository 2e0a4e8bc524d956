package sandbox

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/metrics"
)

// expired reports whether sb's shutdownTime has passed.
func (r *Reconciler) expired(sb *sandboxv1beta1.Sandbox) bool {
	t := sb.Spec.ShutdownTime
	return t != nil && !r.clock.Now().Before(t.Time)
}

// untilExpiry is how long until sb expires, for a timer-driven requeue; 0 when it never does.
func (r *Reconciler) untilExpiry(sb *sandboxv1beta1.Sandbox) time.Duration {
	if sb.Spec.ShutdownTime == nil {
		return 0
	}
	return max(sb.Spec.ShutdownTime.Sub(r.clock.Now()), time.Millisecond)
}

// expire implements spec.shutdownTime and spec.shutdownPolicy: the Pod and Service go (and the
// PVCs, when persistentVolumeClaimRetentionPolicy.whenExpired is Delete); then Delete deletes the
// Sandbox and Retain keeps it with Ready=False/SandboxExpired. Only owned objects are deleted.
func (r *Reconciler) expire(ctx context.Context, sb *sandboxv1beta1.Sandbox) (ctrl.Result, error) {
	if err := r.deleteChildrenOnExpiry(ctx, sb); err != nil {
		return ctrl.Result{}, err
	}
	if policy := sb.Spec.ShutdownPolicy; policy != nil && *policy == sandboxv1beta1.ShutdownPolicyDelete {
		r.recorder.Eventf(sb, nil, corev1.EventTypeNormal, EventExpired, "Expire",
			"Sandbox reached its shutdownTime %s; deleting it (shutdownPolicy Delete)", sb.Spec.ShutdownTime.UTC().Format(time.RFC3339))
		// No status describes a deleted Sandbox: the event is the only record.
		err := r.client.Delete(ctx, sb, client.Preconditions{UID: &sb.UID})
		if err == nil {
			metrics.CountSandboxSuspend(metrics.SuspendReasonExpiry)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	alreadyExpired := meta.IsStatusConditionFalse(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) &&
		meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady).Reason == sandboxv1beta1.SandboxReasonExpired
	obs := &observed{expired: true, idle: sb.Status.Idle}
	if !alreadyExpired {
		obs.record(nil, corev1.EventTypeNormal, EventExpired, "Expire", fmt.Sprintf(
			"Sandbox reached its shutdownTime %s; its Pod and Service were deleted (shutdownPolicy Retain)",
			sb.Spec.ShutdownTime.UTC().Format(time.RFC3339)))
	}
	out, after, err := r.writeStatus(ctx, sb, obs)
	if out == status.Written && !alreadyExpired {
		metrics.CountSandboxSuspend(metrics.SuspendReasonExpiry)
	}
	return ctrl.Result{RequeueAfter: after}, err
}

func (r *Reconciler) deleteChildrenOnExpiry(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	pods, err := r.listOwnedPods(ctx, sb)
	if err != nil {
		return err
	}
	var children []client.Object
	for i := range pods {
		children = append(children, &pods[i])
	}
	svc := &corev1.Service{}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(sb), svc); err == nil && owns(sb, svc) {
		children = append(children, svc)
	} else if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading Service %s: %w", sb.Name, err)
	}
	if p := sb.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenExpired == sandboxv1beta1.DeletePersistentVolumeClaimRetentionPolicyType {
		pvcs, err := r.ownedPVCs(ctx, sb)
		if err != nil {
			return err
		}
		for _, pvc := range pvcs {
			children = append(children, pvc)
		}
	}
	for _, obj := range children {
		if obj.GetDeletionTimestamp() != nil {
			continue
		}
		uid := obj.GetUID()
		if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s %s of expired Sandbox %s: %w", kindOf(obj), obj.GetName(), sb.Name, err)
		}
	}
	return nil
}
