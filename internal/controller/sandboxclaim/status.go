package sandboxclaim

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/status"
)

// observed is what one reconcile pass saw of a claim's sandbox and what it did about it.
type observed struct {
	// state is where the pass left the claim; only enter changes it.
	state claimState
	// sandbox is the Sandbox the claim controls, or nil.
	sandbox *sandboxv1beta1.Sandbox
	// sandboxName is the name of the sandbox the claim was bound to, when that sandbox is gone
	// (with failure SandboxMissing).
	sandboxName string
	// failure says why the claim has no sandbox, with one of the claim reasons; nil when none.
	failure *failure
	// expiredAt is when the claim expired, when it did under shutdownPolicy Retain.
	expiredAt *time.Time
	// acquired describes the sandbox this pass bound or created, for events and metrics.
	acquired *acquisition
	// events are emitted once the status is written.
	events []status.Event
	// requeueAfter is when the claim must be looked at again without any event (expiry), 0 for never.
	requeueAfter time.Duration
	// err is the pass's error, reported as Ready=False/ReconcilerError.
	err error
	// settings says why the claim's Ready sandbox has not taken the claim's settings yet
	// (settings.go); nil when it took them or takes none.
	settings *failure
	// retry is why the settings could not be delivered: the pass returns it, for the
	// controller's backoff, but the status says settings, not ReconcilerError.
	retry error
}

// failure is a reason, one of the claim reasons of extv1beta1, and a message saying what to do.
type failure struct {
	reason  string
	message string
}

func (f *failure) Error() string { return f.reason + ": " + f.message }

func fail(reason, format string, args ...any) *failure {
	return &failure{reason: reason, message: fmt.Sprintf(format, args...)}
}

// acquisition is a sandbox a pass bound from a pool (warm) or created (cold).
type acquisition struct {
	launchType string
	template   string
	warmPool   string
	ready      bool
	at         time.Time
}

// requeueSoon keeps the earliest positive delay of d and the one already in obs.
func (obs *observed) requeueSoon(d time.Duration) {
	if d > 0 && (obs.requeueAfter == 0 || d < obs.requeueAfter) {
		obs.requeueAfter = d
	}
}

// computeStatus returns the claim's status given what this pass observed. It is a pure function of
// the claim and obs, except that condition transition times are kept while a condition's status
// does not change, and the Finished condition, once mirrored, outlives the sandbox (it starts
// ttlSecondsAfterFinished). Finished is the sandbox's as it is, status, reason and time: since
// agent-sandbox v1.0.13 the sandbox keeps it once a Pod terminated (True across a suspend,
// False/NotFinished while a later Pod runs), and so does the claim.
func computeStatus(claim *extv1beta1.SandboxClaim, obs *observed, now metav1.Time) extv1beta1.SandboxClaimStatus {
	if obs.state == stateWaiting && obs.err == nil {
		return *claim.Status.DeepCopy()
	}
	st := extv1beta1.SandboxClaimStatus{
		ObservedGeneration: claim.Generation,
		Conditions:         append([]metav1.Condition(nil), claim.Status.Conditions...),
		Sandbox:            extv1beta1.ClaimSandboxStatus{Name: claim.Status.Sandbox.Name},
	}
	set := func(c metav1.Condition) {
		c.ObservedGeneration = claim.Generation
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}

	if sb := obs.sandbox; sb != nil {
		st.Sandbox.Name = sb.Name
		if obs.expiredAt == nil && sb.DeletionTimestamp == nil {
			st.Sandbox.PodIPs = append([]string(nil), sb.Status.PodIPs...)
			st.Sandbox.ServiceFQDN = sb.Status.ServiceFQDN
		}
		if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionFinished); c != nil {
			set(metav1.Condition{Type: extv1beta1.ClaimConditionFinished, Status: c.Status, Reason: c.Reason,
				Message: c.Message, LastTransitionTime: c.LastTransitionTime})
		} else {
			meta.RemoveStatusCondition(&st.Conditions, extv1beta1.ClaimConditionFinished)
		}
	} else if obs.sandboxName != "" {
		// The claim's sandbox is gone, or a Sandbox that is not the claim's holds its name. The
		// name leaves the status, as agent-sandbox clears it: anyone may create a Sandbox of that
		// name now, and no client must reach it through the claim.
		st.Sandbox.Name = ""
	}
	set(readyCondition(obs))
	return st
}

// readyCondition is the claim's Ready condition: a claim reason when the claim has expired, has
// failed, has no sandbox, or has a Ready sandbox that has not taken its settings, and otherwise
// its sandbox's Ready condition as it is.
func readyCondition(obs *observed) metav1.Condition {
	notReady := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: extv1beta1.ClaimConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	switch {
	case obs.expiredAt != nil:
		return notReady(extv1beta1.ClaimReasonClaimExpired, fmt.Sprintf(
			"Claim expired at %s; its sandbox was deleted (shutdownPolicy Retain)", obs.expiredAt.UTC().Format(time.RFC3339)))
	case obs.failure != nil:
		return notReady(obs.failure.reason, obs.failure.message)
	case obs.err != nil:
		return notReady(extv1beta1.ClaimReasonReconcilerError, "Error seen: "+obs.err.Error())
	case obs.sandbox == nil:
		return notReady(extv1beta1.ClaimReasonSandboxNotReady, "Claim has no sandbox yet")
	}
	c := meta.FindStatusCondition(obs.sandbox.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	switch {
	case c == nil:
		return notReady(extv1beta1.ClaimReasonSandboxNotReady,
			fmt.Sprintf("Sandbox %s has not reported whether it is ready yet", obs.sandbox.Name))
	case c.Status == metav1.ConditionTrue && obs.settings != nil:
		return notReady(obs.settings.reason, obs.settings.message)
	}
	return metav1.Condition{Type: extv1beta1.ClaimConditionReady, Status: c.Status, Reason: c.Reason, Message: c.Message}
}

// isReady reports whether conditions hold Ready=True.
func isReady(conditions []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conditions, extv1beta1.ClaimConditionReady)
}
