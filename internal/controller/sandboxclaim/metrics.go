package sandboxclaim

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
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
// claims it finds unready from when it saw them.
type timeline struct {
	mu     sync.Mutex
	clock  clock.PassiveClock
	claims map[types.UID]*claimTimes
}

func newTimeline(clk clock.PassiveClock) *timeline {
	return &timeline{clock: clk, claims: map[types.UID]*claimTimes{}}
}

func (t *timeline) entry(uid types.UID) *claimTimes {
	e, ok := t.claims[uid]
	if !ok {
		e = &claimTimes{}
		t.claims[uid] = e
	}
	return e
}

// observe records when the informer delivered the claim, the first time it does.
func (t *timeline) observe(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entry(uid); e.observed.IsZero() {
		e.observed = t.clock.Now()
	}
}

// reconciled records the start of the claim's first pass. A claim already Ready then was
// counted by whoever made it Ready.
func (t *timeline) reconciled(claim *extv1beta1.SandboxClaim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(claim.UID)
	if !e.reconciled.IsZero() {
		return
	}
	e.reconciled = t.clock.Now()
	if isReady(claim.Status.Conditions) {
		e.recorded = true
	}
}

// bound records when the claim got its sandbox.
func (t *timeline) bound(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entry(uid).bound = at
}

// sandboxReady records when a pass first saw the claim's sandbox Ready.
func (t *timeline) sandboxReady(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entry(uid); e.sandboxReady.IsZero() {
		e.sandboxReady = t.clock.Now()
	}
}

// firstReady returns the claim's times and true the first time it is called for a claim whose
// metrics are not recorded yet.
func (t *timeline) firstReady(uid types.UID) (claimTimes, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entry(uid)
	if e.recorded {
		return claimTimes{}, false
	}
	e.recorded = true
	return *e, true
}

// forget drops a deleted claim.
func (t *timeline) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.claims, uid)
}

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
