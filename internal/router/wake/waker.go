package wake

import (
	"context"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// Retry-After (seconds) of the answers to requests whose sandbox did not wake.
const (
	// timeoutRetryAfter: the sandbox was resumed and goes on starting; a retry soon may find it
	// Ready.
	timeoutRetryAfter = 10
	// FailedRetryAfter: the sandbox needs someone to look at it; retrying at once won't help.
	FailedRetryAfter = 30
)

// failureReasons are the reasons of Ready=False, for the generation the router resumed, that end
// a wake: the API's terminal reasons (sandboxv1beta1.SandboxTerminalReasons: the Pod ended, the
// sandbox expired), and the wake's own, since it holds a caller's request and answers it rather
// than wait out what needs a person: the controller failed, the spec cannot work, or someone
// suspended the sandbox again.
var failureReasons = func() map[string]bool {
	m := map[string]bool{
		sandboxv1beta1.SandboxReasonReconcilerError:      true,
		sandboxv1beta1.SandboxReasonInvalidConfiguration: true,
		sandboxv1beta1.SandboxReasonMultiplePods:         true,
		sandboxv1beta1.SandboxReasonSuspended:            true,
	}
	for _, r := range sandboxv1beta1.SandboxTerminalReasons() {
		m[r] = true
	}
	return m
}()

// IsSuspended reports whether sb's spec asks for it to be suspended.
func IsSuspended(sb *sandboxv1beta1.Sandbox) bool {
	return sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended
}

// Outcome says whether the wake of the sandbox with uid, resumed at generation gen, is over as
// the cache shows the sandbox (sb, nil when gone): ready (done, nil), failed (done, an error),
// or not yet (false).
func Outcome(sb *sandboxv1beta1.Sandbox, uid types.UID, gen int64) (bool, *httperr.Error) {
	if sb == nil || sb.UID != uid {
		return true, &httperr.Error{Code: http.StatusServiceUnavailable, RetryAfter: FailedRetryAfter,
			Msg: "the sandbox was deleted while the router was waking it"}
	}
	ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	switch {
	case ready == nil || ready.ObservedGeneration < gen:
		return false, nil
	case ready.Status == metav1.ConditionTrue && len(sb.Status.PodIPs) > 0:
		return true, nil
	case ready.Status == metav1.ConditionFalse && failureReasons[ready.Reason]:
		herr := httperr.Errorf(http.StatusServiceUnavailable, "sandbox %s/%s was resumed to answer this request but did not start: "+
			"Ready is False (%s: %s); look at it with: kubectl describe sandbox -n %s %s", sb.Namespace, sb.Name, ready.Reason,
			ready.Message, sb.Namespace, sb.Name)
		herr.RetryAfter = FailedRetryAfter
		return true, herr
	}
	return false, nil
}

// WakerDeps is what a Waker acts with.
type WakerDeps struct {
	// Timeout bounds a wake, and each request's wait for one.
	Timeout time.Duration
	Now     func() time.Time
	// Current reads a sandbox from the cache; nil when it is gone.
	Current func(ctx context.Context, ns, name string) *sandboxv1beta1.Sandbox
	// Resume sets the sandbox's operatingMode to Running (once) and returns its generation then
	// (Writer.Resume).
	Resume func(ctx context.Context, sb *sandboxv1beta1.Sandbox, at time.Time) (int64, error)
	// Serving reports whether sb, Ready for the resumed generation, can take the held requests:
	// the cache holds its live Pod with its pod IP and its claim's settings are in that Pod
	// (SettingsOutcome); or an error when it never will.
	Serving func(ctx context.Context, sb *sandboxv1beta1.Sandbox) (bool, *httperr.Error)
	// Events wakes the wakes when the cache changes the sandbox, its Pod or its claim.
	Events *Events
	BG     *Background
}

// Waker resumes suspended sandboxes for the requests that reach them: one resume per sandbox
// however many requests wait (they join the wake in flight), then it waits, woken by the
// informers' events (Events) rather than polling, until the cache shows the sandbox Ready for
// the resumed generation with its Pod.
type Waker struct {
	WakerDeps

	mu  sync.Mutex
	ops map[types.UID]*wakeOp
}

// NewWaker returns a Waker with no wake in flight.
func NewWaker(d WakerDeps) *Waker { return &Waker{WakerDeps: d, ops: map[types.UID]*wakeOp{}} }

// wakeOp is one wake of one sandbox.
type wakeOp struct {
	namespace, name string
	uid             types.UID
	// done is closed when the wake is over; err is then its outcome (nil: Ready).
	done chan struct{}
	err  *httperr.Error
}

// Wait wakes sb, which the cache showed suspended, or joins its wake in flight, and waits at
// most Timeout for the outcome. It returns at once when the sandbox is no longer suspended.
// When ctx ends first (the client went away) the wake goes on without it.
func (w *Waker) Wait(ctx context.Context, sb *sandboxv1beta1.Sandbox) *httperr.Error {
	op := w.join(ctx, sb)
	if op == nil {
		return nil
	}
	timer := time.NewTimer(w.Timeout)
	defer timer.Stop()
	select {
	case <-op.done:
		return op.err
	case <-timer.C:
		return w.timeoutError(sb.Namespace, sb.Name)
	case <-ctx.Done():
		return httperr.Errorf(httperr.StatusClientClosedRequest, "the client went away while sandbox %s/%s was being woken",
			sb.Namespace, sb.Name)
	}
}

// Waking reports whether a wake of the sandbox with uid is in flight.
func (w *Waker) Waking(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ops[uid] != nil
}

// join returns the wake of sb in flight, or starts one if the cache still shows sb suspended;
// nil when it does not (someone resumed it meanwhile).
func (w *Waker) join(ctx context.Context, sb *sandboxv1beta1.Sandbox) *wakeOp {
	w.mu.Lock()
	defer w.mu.Unlock()
	if op := w.ops[sb.UID]; op != nil {
		return op
	}
	cur := w.Current(ctx, sb.Namespace, sb.Name)
	if cur == nil || cur.UID != sb.UID || !IsSuspended(cur) {
		return nil
	}
	op := &wakeOp{namespace: sb.Namespace, name: sb.Name, uid: sb.UID, done: make(chan struct{})}
	w.ops[sb.UID] = op
	w.BG.Go(func(ctx context.Context) { w.run(ctx, op, cur) })
	return op
}

// run resumes the sandbox and waits until it is Ready, failed, or Timeout has passed.
func (w *Waker) run(ctx context.Context, op *wakeOp, sb *sandboxv1beta1.Sandbox) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	defer func() {
		w.mu.Lock()
		delete(w.ops, op.uid)
		w.mu.Unlock()
		close(op.done)
	}()
	gen, err := w.Resume(ctx, sb, w.Now())
	if err != nil {
		op.err = resumeError(sb, err)
		return
	}
	op.err = w.await(ctx, op, gen)
}

// await waits until the cache shows the outcome of the wake of op's sandbox, resumed at
// generation gen: it looks when the cache changes the sandbox, its Pod or its claim.
func (w *Waker) await(ctx context.Context, op *wakeOp, gen int64) *httperr.Error {
	var out *httperr.Error
	done := w.Events.Await(ctx, func(ctx context.Context) bool {
		sb := w.Current(ctx, op.namespace, op.name)
		over, herr := Outcome(sb, op.uid, gen)
		if !over {
			return false
		}
		if herr != nil {
			out = herr
			return true
		}
		ok, herr := w.Serving(ctx, sb)
		out = herr
		return ok || herr != nil
	}, types.NamespacedName{Namespace: op.namespace, Name: op.name})
	if !done {
		return w.timeoutError(op.namespace, op.name)
	}
	return out
}

func (w *Waker) timeoutError(ns, name string) *httperr.Error {
	herr := httperr.Errorf(http.StatusGatewayTimeout, "sandbox %s/%s was suspended; the router resumed it for this request, but it "+
		"is not Ready after %s (--wake-timeout); it goes on starting: retry shortly, or look at it with: kubectl describe sandbox -n %s %s",
		ns, name, w.Timeout, ns, name)
	herr.RetryAfter = timeoutRetryAfter
	return herr
}

// resumeError is the answer when the router could not resume sb.
func resumeError(sb *sandboxv1beta1.Sandbox, err error) *httperr.Error {
	hint := "retry shortly"
	switch {
	case apierrors.IsForbidden(err):
		hint = "the router's ClusterRole must allow verb patch on sandboxes (group agents.x-k8s.io); reinstall kubox's RBAC"
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsConflict(err):
		hint = "the sandbox was deleted or replaced meanwhile"
	}
	herr := httperr.Errorf(http.StatusServiceUnavailable, "sandbox %s/%s is suspended, and the router could not resume it: %v; %s",
		sb.Namespace, sb.Name, err, hint)
	herr.RetryAfter = FailedRetryAfter
	return herr
}

// CheckPolicy refuses to wake a sandbox whose idle policy does not say so (none, or wake
// Manual), and tells how to resume it.
func CheckPolicy(sb *sandboxv1beta1.Sandbox) *httperr.Error {
	why := "it has no idlePolicy, so requests do not wake it"
	if p := sb.Spec.IdlePolicy; p != nil {
		if p.Wake != sandboxv1beta1.WakePolicyManual {
			return nil
		}
		why = "its idlePolicy.wake is Manual, so requests do not wake it"
	}
	herr := httperr.Errorf(http.StatusServiceUnavailable, "sandbox %s/%s is suspended (spec.operatingMode Suspended) and %s; resume "+
		"it with: kubox resume -n %s %s (or set its spec.operatingMode to Running), then retry", sb.Namespace, sb.Name, why,
		sb.Namespace, sb.Name)
	herr.RetryAfter = FailedRetryAfter
	return herr
}

// SettingsOutcome reports whether the claim that controls sb, if it takes settings through the
// agent (extv1beta1.SandboxClaimSpec.TakesSettings), has them in sb's current Pod. A woken
// sandbox's new Pod starts without them; the claim controller sends them once the sandbox is
// Ready and only then turns the claim's Ready True, so the claim's Ready must have turned True no
// earlier than the sandbox's. A claim whose Secret cannot be read will not get there: that is an
// error naming it.
func SettingsOutcome(sb *sandboxv1beta1.Sandbox, claim *extv1beta1.SandboxClaim) (bool, *httperr.Error) {
	if !claim.Spec.TakesSettings(extv1beta1.LaunchedWarm(sb.Labels)) {
		return true, nil
	}
	sbReady := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	c := meta.FindStatusCondition(claim.Status.Conditions, extv1beta1.ClaimConditionReady)
	switch {
	case sbReady == nil || c == nil:
		return false, nil
	case c.Status == metav1.ConditionTrue:
		// True since before the sandbox turned Ready is the claim's state before the suspend.
		return !c.LastTransitionTime.Before(&sbReady.LastTransitionTime), nil
	case c.Reason == extv1beta1.ClaimReasonSecretFilesRejected:
		// While suspended the claim's reason is the sandbox's; this one is from the new Pod.
		herr := httperr.Errorf(http.StatusServiceUnavailable, "sandbox %s/%s was resumed to answer this request, but SandboxClaim "+
			"%s cannot take its settings (%s: %s); fix it, then retry", sb.Namespace, sb.Name, claim.Name, c.Reason, c.Message)
		herr.RetryAfter = FailedRetryAfter
		return false, herr
	}
	return false, nil
}
