package sandboxclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/status"
)

// expiry returns when a claim with lifecycle lc expires, given the Finished condition of its
// sandbox (or, once the sandbox is gone, the claim's own copy of it): the earlier of shutdownTime
// and ttlSecondsAfterFinished after the sandbox finished. It returns nil when the claim does not
// expire, or not yet knowably (a TTL but no finished sandbox).
//
// The TTL counts from Finished=True's lastTransitionTime only, as in agent-sandbox v1.0.13: since
// the Sandbox keeps Finished=True while it has no Pod, the TTL keeps counting while it is
// suspended; a resume starts a Pod that has not finished (Finished=False/NotFinished), which stops
// the TTL until that Pod finishes in turn, and it then counts from that Pod's finish.
func expiry(lc *extv1beta1.ClaimLifecycle, finished *metav1.Condition) *time.Time {
	if lc == nil {
		return nil
	}
	var at *time.Time
	if lc.ShutdownTime != nil {
		t := lc.ShutdownTime.Time
		at = &t
	}
	if lc.TTLSecondsAfterFinished != nil && finished != nil && finished.Status == metav1.ConditionTrue {
		t := finished.LastTransitionTime.Add(time.Duration(*lc.TTLSecondsAfterFinished) * time.Second)
		if at == nil || t.Before(*at) {
			at = &t
		}
	}
	return at
}

// shutdownPolicy is lifecycle.shutdownPolicy, Retain when unset (as the CRD defaults it).
func shutdownPolicy(lc *extv1beta1.ClaimLifecycle) extv1beta1.ClaimShutdownPolicy {
	if lc == nil || lc.ShutdownPolicy == "" {
		return extv1beta1.ClaimShutdownPolicyRetain
	}
	return lc.ShutdownPolicy
}

// finishedCondition is the Finished condition of the claim's sandbox when the pass saw one, and
// otherwise the claim's own mirrored copy, which outlives the sandbox.
func finishedCondition(claim *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) *metav1.Condition {
	if sb != nil {
		return meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionFinished)
	}
	return meta.FindStatusCondition(claim.Status.Conditions, extv1beta1.ClaimConditionFinished)
}

// reconcileLifecycle implements spec.lifecycle. Before expiry it sets a timer for it; at expiry
// Delete and DeleteForeground delete the claim (its sandbox follows through its owner reference;
// with DeleteForeground the claim stays until the sandbox and its Pod are gone), and Retain
// deletes the sandbox and keeps the claim, which never gets another.
func (r *Reconciler) reconcileLifecycle(ctx context.Context, claim *extv1beta1.SandboxClaim, obs *observed) error {
	at := expiry(claim.Spec.Lifecycle, finishedCondition(claim, obs.sandbox))
	if at == nil {
		return nil
	}
	now := r.clock.Now()
	if now.Before(*at) {
		obs.requeueSoon(at.Sub(now))
		return nil
	}
	policy := shutdownPolicy(claim.Spec.Lifecycle)
	when := at.UTC().Format(time.RFC3339)
	switch policy {
	case extv1beta1.ClaimShutdownPolicyDelete, extv1beta1.ClaimShutdownPolicyDeleteForeground:
		propagation := metav1.DeletePropagationBackground
		if policy == extv1beta1.ClaimShutdownPolicyDeleteForeground {
			propagation = metav1.DeletePropagationForeground
		}
		if err := r.client.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}, client.PropagationPolicy(propagation)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting expired SandboxClaim %s: %w", claim.Name, err)
		}
		obs.claimDeleted()
		r.recorder.Eventf(claim, nil, corev1.EventTypeNormal, EventClaimExpired, "Expire",
			"Claim expired at %s; deleting it with its sandbox (shutdownPolicy %s)", when, policy)
		return nil
	}
	obs.expire(at)
	if sb := obs.sandbox; sb != nil && sb.DeletionTimestamp == nil {
		if err := r.client.Delete(ctx, sb, client.Preconditions{UID: &sb.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Sandbox %s of expired SandboxClaim %s: %w", sb.Name, claim.Name, err)
		}
	}
	if c := meta.FindStatusCondition(claim.Status.Conditions, extv1beta1.ClaimConditionReady); c == nil || c.Reason != extv1beta1.ClaimReasonClaimExpired {
		obs.events = append(obs.events, status.Event{Type: corev1.EventTypeNormal, Reason: EventClaimExpired, Action: "Expire",
			Note: fmt.Sprintf("Claim expired at %s; its sandbox was deleted and the claim kept (shutdownPolicy Retain)", when)})
	}
	return nil
}
