package sandboxclaim

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/metrics"
)

// WebhookFirstObservedAtAnnotation on a claim is when an admission webhook first saw it (RFC 3339
// with nanoseconds), the start of agent_sandbox_claim_startup_latency_ms. kubox sets no such
// webhook; a cluster may run one, as agent-sandbox's examples do.
const WebhookFirstObservedAtAnnotation = "agents.x-k8s.io/webhook-first-observed-at"

// claimTimes are the moments of one claim's way to Ready that this process saw, in its own
// clock. A zero time was not seen (the claim predates the process, or the phase did not happen
// here).
type claimTimes struct {
	// observed is when the informer delivered the claim.
	observed time.Time
	// reconciled is when the first pass started.
	reconciled time.Time
	// bound is when the claim got its sandbox (bind or create).
	bound time.Time
	// sandboxReady is when a pass first saw the sandbox Ready.
	sandboxReady time.Time
	// recorded is true once the first-Ready metrics are recorded, or when the claim was already
	// Ready when this process first saw it: they are recorded once per claim.
	recorded bool
}

// timeline keeps claimTimes for the claims the controller is working on, in memory: metrics
// bookkeeping costs no API write. A restarted controller loses it and records the latency of the
// claims it finds unready from when it saw them. Entries do not expire; a claim's goes when the
// claim does.
type timeline struct {
	clock  clock.PassiveClock
	claims *inflight.Store[types.UID, claimTimes]
}

func newTimeline(clk clock.PassiveClock) *timeline {
	return &timeline{clock: clk, claims: inflight.NewStore[types.UID, claimTimes](clk, 0)}
}

// update runs fn on uid's times, as one step.
func (t *timeline) update(uid types.UID, fn func(e *claimTimes)) {
	t.claims.Update(uid, func(e *claimTimes, _ time.Duration, _ bool) inflight.Action {
		fn(e)
		return inflight.Keep
	})
}

// observe records when the informer delivered the claim, the first time it does.
func (t *timeline) observe(uid types.UID) {
	now := t.clock.Now()
	t.update(uid, func(e *claimTimes) {
		if e.observed.IsZero() {
			e.observed = now
		}
	})
}

// reconciled records the start of the claim's first pass. A claim already Ready then was
// counted by whoever made it Ready.
func (t *timeline) reconciled(claim *extv1beta1.SandboxClaim) {
	now := t.clock.Now()
	t.update(claim.UID, func(e *claimTimes) {
		if e.reconciled.IsZero() {
			e.reconciled = now
			e.recorded = e.recorded || isReady(claim.Status.Conditions)
		}
	})
}

// firstSeen returns when this process first saw the claim: when the informer delivered it, or
// else when its first pass started; zero when neither was seen.
func (t *timeline) firstSeen(uid types.UID) time.Time {
	var at time.Time
	t.update(uid, func(e *claimTimes) {
		at = e.observed
		if at.IsZero() {
			at = e.reconciled
		}
	})
	return at
}

// bound records when the claim got its sandbox.
func (t *timeline) bound(uid types.UID, at time.Time) {
	t.update(uid, func(e *claimTimes) { e.bound = at })
}

// sandboxReady records when a pass first saw the claim's sandbox Ready.
func (t *timeline) sandboxReady(uid types.UID) {
	now := t.clock.Now()
	t.update(uid, func(e *claimTimes) {
		if e.sandboxReady.IsZero() {
			e.sandboxReady = now
		}
	})
}

// firstReady returns the claim's times and true the first time it is called for a claim whose
// metrics are not recorded yet.
func (t *timeline) firstReady(uid types.UID) (times claimTimes, first bool) {
	t.update(uid, func(e *claimTimes) {
		if !e.recorded {
			e.recorded = true
			times, first = *e, true
		}
	})
	return times, first
}

// forget drops a deleted claim.
func (t *timeline) forget(uid types.UID) { t.claims.Forget(uid) }

// recordFirstReady records the claim's latency metrics and phases, once per claim, when its Ready
// status has just been written at readyAt.
func (r *Reconciler) recordFirstReady(claim *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox, readyAt time.Time) {
	times, first := r.timeline.firstReady(claim.UID)
	if !first || sb == nil {
		return
	}
	launchType, template := sb.Labels[sandboxv1beta1.LaunchTypeLabel], sb.Annotations[sandboxv1beta1.SandboxTemplateRefAnnotation]
	observed := times.observed
	if t, ok := annotationTime(claim, extv1beta1.ControllerFirstObservedAtAnnotation); ok {
		observed = t
	}
	if !observed.IsZero() {
		metrics.ObserveClaimControllerStartupLatency(launchType, template, readyAt.Sub(observed))
	}
	if t, ok := annotationTime(claim, extv1beta1.ClientFirstRequestedAtAnnotation); ok {
		metrics.ObserveClientClaimStartupLatency(launchType, template, readyAt.Sub(t))
	}
	if t, ok := annotationTime(claim, WebhookFirstObservedAtAnnotation); ok {
		metrics.ObserveClaimStartupLatency(launchType, template, readyAt.Sub(t))
	}
	for _, p := range []struct {
		phase      string
		start, end time.Time
	}{
		{metrics.ClaimPhaseQueued, times.observed, times.reconciled},
		{metrics.ClaimPhaseBound, times.reconciled, times.bound},
		{metrics.ClaimPhaseSandboxReady, times.bound, times.sandboxReady},
		{metrics.ClaimPhaseStatusWritten, times.sandboxReady, readyAt},
	} {
		if !p.start.IsZero() && !p.end.IsZero() {
			metrics.ObserveClaimPhase(p.phase, p.end.Sub(p.start))
		}
	}
}

// annotationTime parses the claim's annotation key as an RFC 3339 time.
func annotationTime(claim *extv1beta1.SandboxClaim, key string) (time.Time, bool) {
	v, ok := claim.Annotations[key]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}
