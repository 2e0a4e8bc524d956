package router

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/provenance"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// Retry-After (seconds) of the answers to requests whose sandbox did not wake.
const (
	// wakeTimeoutRetryAfter: the sandbox was resumed and goes on starting; a retry soon may
	// find it Ready.
	wakeTimeoutRetryAfter = 10
	// wakeFailedRetryAfter: the sandbox needs someone to look at it; retrying at once won't help.
	wakeFailedRetryAfter = 30
)

// statusClientClosedRequest is nginx's "client closed request": nobody reads it, the access
// log shows it.
const statusClientClosedRequest = 499

// wakeFailureReasons are the reasons of Ready=False, for the generation the router resumed,
// that mean the sandbox will not become Ready by waiting: the controller failed, the spec
// cannot work, the Pod ended, the sandbox expired, or someone suspended it again.
var wakeFailureReasons = map[string]bool{
	sandboxv1beta1.SandboxReasonReconcilerError:      true,
	sandboxv1beta1.SandboxReasonInvalidConfiguration: true,
	sandboxv1beta1.SandboxReasonMultiplePods:         true,
	sandboxv1beta1.SandboxReasonPodFailed:            true,
	sandboxv1beta1.SandboxReasonPodSucceeded:         true,
	sandboxv1beta1.SandboxReasonExpired:              true,
	sandboxv1beta1.SandboxReasonSuspended:            true,
}

// isSuspended reports whether sb's spec asks for it to be suspended.
func isSuspended(sb *sandboxv1beta1.Sandbox) bool {
	return sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended
}

// wakeOutcome says whether the wake of the sandbox with uid, resumed at generation gen, is
// over as the cache shows the sandbox (sb, nil when gone): ready (done, nil), failed (done, an
// error), or not yet (false).
func wakeOutcome(sb *sandboxv1beta1.Sandbox, uid types.UID, gen int64) (bool, *httpError) {
	if sb == nil || sb.UID != uid {
		return true, &httpError{code: http.StatusServiceUnavailable, retryAfter: wakeFailedRetryAfter,
			msg: "the sandbox was deleted while the router was waking it"}
	}
	ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	switch {
	case ready == nil || ready.ObservedGeneration < gen:
		return false, nil
	case ready.Status == metav1.ConditionTrue && len(sb.Status.PodIPs) > 0:
		return true, nil
	case ready.Status == metav1.ConditionFalse && wakeFailureReasons[ready.Reason]:
		herr := errorf(http.StatusServiceUnavailable, "sandbox %s/%s was resumed to answer this request but did not start: Ready is False "+
			"(%s: %s); look at it with: kubectl describe sandbox -n %s %s", sb.Namespace, sb.Name, ready.Reason, ready.Message,
			sb.Namespace, sb.Name)
		herr.retryAfter = wakeFailedRetryAfter
		return true, herr
	}
	return false, nil
}

// waker resumes suspended sandboxes for the requests that reach them: one resume per sandbox
// however many requests wait (they join the wake in flight), then it waits, woken by the
// informers' events rather than polling, until the cache shows the sandbox Ready for the
// resumed generation with its Pod.
type waker struct {
	// timeout bounds a wake, and each request's wait for one.
	timeout time.Duration
	now     func() time.Time
	// current reads a sandbox from the cache; nil when it is gone.
	current func(ctx context.Context, ns, name string) *sandboxv1beta1.Sandbox
	// resume sets the sandbox's operatingMode to Running (once) and returns its generation then.
	resume func(ctx context.Context, sb *sandboxv1beta1.Sandbox, at time.Time) (int64, error)
	// serving reports whether sb, Ready for the resumed generation, can take the held requests:
	// the cache holds its live Pod with its pod IP and its claim's settings are in that Pod
	// (Router.serving); or an error when it never will.
	serving func(ctx context.Context, sb *sandboxv1beta1.Sandbox) (bool, *httpError)
	bg      *background

	mu  sync.Mutex
	ops map[types.UID]*wakeOp
}

// wakeOp is one wake of one sandbox.
type wakeOp struct {
	namespace, name string
	uid             types.UID
	// notify is signalled when the cache changes the sandbox or its Pod.
	notify chan struct{}
	// done is closed when the wake is over; err is then its outcome (nil: Ready).
	done chan struct{}
	err  *httpError
}

// wait wakes sb, which the cache showed suspended, or joins its wake in flight, and waits at
// most w.timeout for the outcome. It returns at once when the sandbox is no longer suspended.
// When ctx ends first (the client went away) the wake goes on without it.
func (w *waker) wait(ctx context.Context, sb *sandboxv1beta1.Sandbox) *httpError {
	op := w.join(ctx, sb)
	if op == nil {
		return nil
	}
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	select {
	case <-op.done:
		return op.err
	case <-timer.C:
		return w.timeoutError(sb)
	case <-ctx.Done():
		return errorf(statusClientClosedRequest, "the client went away while sandbox %s/%s was being woken", sb.Namespace, sb.Name)
	}
}

// waking reports whether a wake of the sandbox with uid is in flight.
func (w *waker) waking(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ops[uid] != nil
}

// join returns the wake of sb in flight, or starts one if the cache still shows sb suspended;
// nil when it does not (someone resumed it meanwhile).
func (w *waker) join(ctx context.Context, sb *sandboxv1beta1.Sandbox) *wakeOp {
	w.mu.Lock()
	defer w.mu.Unlock()
	if op := w.ops[sb.UID]; op != nil {
		return op
	}
	cur := w.current(ctx, sb.Namespace, sb.Name)
	if cur == nil || cur.UID != sb.UID || !isSuspended(cur) {
		return nil
	}
	op := &wakeOp{namespace: sb.Namespace, name: sb.Name, uid: sb.UID, notify: make(chan struct{}, 1), done: make(chan struct{})}
	w.ops[sb.UID] = op
	w.bg.goBackground(func(ctx context.Context) { w.run(ctx, op, cur) })
	return op
}

// run resumes the sandbox and waits until it is Ready, failed, or w.timeout has passed.
func (w *waker) run(ctx context.Context, op *wakeOp, sb *sandboxv1beta1.Sandbox) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	defer func() {
		w.mu.Lock()
		delete(w.ops, op.uid)
		w.mu.Unlock()
		close(op.done)
	}()
	gen, err := w.resume(ctx, sb, w.now())
	if err != nil {
		op.err = resumeError(sb, err)
		return
	}
	op.err = w.await(ctx, op, gen)
}

// await waits until the cache shows the outcome of the wake of op's sandbox, resumed at
// generation gen.
func (w *waker) await(ctx context.Context, op *wakeOp, gen int64) *httpError {
	for {
		sb := w.current(ctx, op.namespace, op.name)
		if done, herr := wakeOutcome(sb, op.uid, gen); done {
			if herr != nil {
				return herr
			}
			if ok, herr := w.serving(ctx, sb); ok || herr != nil {
				return herr
			}
		}
		select {
		case <-op.notify:
		case <-ctx.Done():
			return w.timeoutError(&sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: op.namespace, Name: op.name}})
		}
	}
}

// notifyNamed tells the wake of the sandbox ns/name, if any, that the cache changed its claim.
func (w *waker) notifyNamed(ns, name string) {
	w.mu.Lock()
	var uid types.UID
	for u, op := range w.ops {
		if op.namespace == ns && op.name == name {
			uid = u
		}
	}
	w.mu.Unlock()
	if uid != "" {
		w.notify(uid)
	}
}

// notify tells the wake of the sandbox with uid, if any, that the cache changed it or its Pod.
func (w *waker) notify(uid types.UID) {
	w.mu.Lock()
	op := w.ops[uid]
	w.mu.Unlock()
	if op == nil {
		return
	}
	select {
	case op.notify <- struct{}{}:
	default: // a look is already due
	}
}

func (w *waker) timeoutError(sb *sandboxv1beta1.Sandbox) *httpError {
	herr := errorf(http.StatusGatewayTimeout, "sandbox %s/%s was suspended; the router resumed it for this request, but it is not Ready "+
		"after %s (--wake-timeout); it goes on starting: retry shortly, or look at it with: kubectl describe sandbox -n %s %s",
		sb.Namespace, sb.Name, w.timeout, sb.Namespace, sb.Name)
	herr.retryAfter = wakeTimeoutRetryAfter
	return herr
}

// resumeError is the answer when the router could not resume sb.
func resumeError(sb *sandboxv1beta1.Sandbox, err error) *httpError {
	hint := "retry shortly"
	switch {
	case apierrors.IsForbidden(err):
		hint = "the router's ClusterRole must allow verb patch on sandboxes (group agents.x-k8s.io); reinstall kubox's RBAC"
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsConflict(err):
		hint = "the sandbox was deleted or replaced meanwhile"
	}
	herr := errorf(http.StatusServiceUnavailable, "sandbox %s/%s is suspended, and the router could not resume it: %v; %s",
		sb.Namespace, sb.Name, err, hint)
	herr.retryAfter = wakeFailedRetryAfter
	return herr
}

// wakeIfSuspended lets a request reach sb: when sb is suspended and its idle policy wakes it on
// request, and the caller may resume it, it resumes it and returns the sandbox once it is
// Ready (as the cache has it then); a sandbox that is not suspended is returned as it is.
func (rt *Router) wakeIfSuspended(ctx context.Context, p *principal, sb *sandboxv1beta1.Sandbox) (*sandboxv1beta1.Sandbox, *httpError) {
	// A request that comes while a wake is in flight waits for it, also once the cache shows
	// the sandbox Running but not yet Ready: it resumes nothing, so it needs no more than the
	// connect permission it has.
	if !rt.waker.waking(sb.UID) {
		if !isSuspended(sb) {
			return sb, nil
		}
		if herr := checkWakePolicy(sb); herr != nil {
			return nil, herr
		}
		if herr := rt.authorizeWake(ctx, p, sb); herr != nil {
			if herr.code == http.StatusForbidden {
				rt.metrics.Wakes.WithLabelValues(metrics.WakeForbidden).Inc()
			}
			return nil, herr
		}
	}
	start := infoFrom(ctx).start
	if start.IsZero() {
		start = rt.now()
	}
	herr := rt.waker.wait(ctx, sb)
	rt.recordWake(herr, start)
	if herr != nil {
		return nil, herr
	}
	cur := rt.cachedSandbox(ctx, sb.Namespace, sb.Name)
	if cur == nil || cur.UID != sb.UID {
		return nil, errorf(http.StatusNotFound, "sandbox %s/%s was deleted while the router was waking it", sb.Namespace, sb.Name)
	}
	return cur, nil
}

// checkWakePolicy refuses to wake a sandbox whose idle policy does not say so (none, or wake
// Manual), and tells how to resume it.
func checkWakePolicy(sb *sandboxv1beta1.Sandbox) *httpError {
	why := "it has no idlePolicy, so requests do not wake it"
	if p := sb.Spec.IdlePolicy; p != nil {
		if p.Wake != sandboxv1beta1.WakePolicyManual {
			return nil
		}
		why = "its idlePolicy.wake is Manual, so requests do not wake it"
	}
	herr := errorf(http.StatusServiceUnavailable, "sandbox %s/%s is suspended (spec.operatingMode Suspended) and %s; resume it with: "+
		"kubox resume -n %s %s (or set its spec.operatingMode to Running), then retry", sb.Namespace, sb.Name, why, sb.Namespace, sb.Name)
	herr.retryAfter = wakeFailedRetryAfter
	return herr
}

// authorizeWake decides whether p may wake sb. Waking resumes the sandbox, so it takes what
// resuming takes (kubox resume): verb patch on the Sandbox, or the claim token of the claim
// that owns it; the shared token opens everything.
func (rt *Router) authorizeWake(ctx context.Context, p *principal, sb *sandboxv1beta1.Sandbox) *httpError {
	switch p.kind {
	case principalShared:
		return nil
	case principalClaim:
		if claimOwns(sb, p.claim.UID) {
			return nil
		}
		return errorf(http.StatusForbidden, "sandbox %s/%s is suspended, and the claim token of SandboxClaim %s/%s may not wake it: "+
			"it does not belong to that claim", sb.Namespace, sb.Name, p.claim.Namespace, p.claim.Claim)
	case principalUser:
		attrs := authn.Attributes{Verb: "patch", Group: sandboxv1beta1.GroupVersion.Group, Resource: "sandboxes",
			Namespace: sb.Namespace, Name: sb.Name}
		d, err := rt.reviewer.Authorize(ctx, p.user, attrs)
		if err != nil {
			return errorf(http.StatusServiceUnavailable, "%v; retry shortly", err)
		}
		if d.Allowed {
			return nil
		}
		return errorf(http.StatusForbidden, "sandbox %s/%s is suspended, and %s may not wake it: waking resumes it, which needs verb patch "+
			"on sandboxes (group %s) for it, as kubox resume does; ask for that permission, or ask someone who has it to run: kubox resume -n %s %s",
			sb.Namespace, sb.Name, p.user.Name, attrs.Group, sb.Namespace, sb.Name)
	}
	return errorf(http.StatusForbidden, "sandbox %s/%s is suspended, and the router wakes a sandbox only for a caller it can check: send a "+
		"Kubernetes token allowed to patch the Sandbox, or a claim token of its claim", sb.Namespace, sb.Name)
}

// recordWake counts the outcome of a request's wait for a wake that began at start.
func (rt *Router) recordWake(herr *httpError, start time.Time) {
	switch {
	case herr == nil:
		rt.metrics.Wakes.WithLabelValues(metrics.WakeWoken).Inc()
		rt.metrics.WakeDuration.Observe(rt.now().Sub(start).Seconds())
	case herr.code == http.StatusGatewayTimeout:
		rt.metrics.Wakes.WithLabelValues(metrics.WakeTimeout).Inc()
	case herr.code != statusClientClosedRequest:
		rt.metrics.Wakes.WithLabelValues(metrics.WakeFailed).Inc()
	}
}

// resumeSandbox is the one write of a wake: a merge patch that sets operatingMode Running,
// removes kubox.dev/suspended-by and sets kubox.dev/last-activity to at, on the Sandbox with
// sb's UID only (a Sandbox recreated under the name meanwhile fails the patch). It returns the
// generation of the patched Sandbox.
func (rt *Router) resumeSandbox(ctx context.Context, sb *sandboxv1beta1.Sandbox, at time.Time) (int64, error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid": sb.UID,
			"annotations": map[string]any{
				sandboxv1beta1.SuspendedByAnnotation:  nil,
				sandboxv1beta1.LastActivityAnnotation: formatActivity(at),
			},
		},
		"spec": map[string]any{"operatingMode": sandboxv1beta1.SandboxOperatingModeRunning},
	})
	if err != nil {
		return 0, err
	}
	out := &sandboxv1beta1.Sandbox{}
	out.Namespace, out.Name = sb.Namespace, sb.Name
	if err := rt.writer.Patch(ctx, out, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return 0, err
	}
	if out.UID != sb.UID {
		return 0, errors.New("the Sandbox was replaced by another of the same name")
	}
	rt.activity.written(sb.UID, at)
	rt.log.Info("Resumed a suspended sandbox for a request", "namespace", sb.Namespace, "name", sb.Name, "generation", out.Generation)
	return out.Generation, nil
}

// serving reports whether sb, which the cache shows Ready for the generation the router resumed,
// can take the requests held for it: its live Pod is in the cache, and the settings of the claim
// that owns it are in that Pod (claimSettingsIn).
func (rt *Router) serving(ctx context.Context, sb *sandboxv1beta1.Sandbox) (bool, *httpError) {
	if !rt.podReady(ctx, sb) {
		return false, nil
	}
	return rt.claimSettingsIn(ctx, sb)
}

// claimSettingsIn reports whether the claim that controls sb, if it takes settings through the
// agent (its env and secret files, extv1beta1.SandboxClaimSpec.TakesSettings), has them in sb's
// current Pod. A woken sandbox's new Pod starts without them; the claim controller sends them
// once the sandbox is Ready and only then turns the claim's Ready True, so the claim's Ready must
// have turned True no earlier than the sandbox's. A claim whose Secret cannot be read will not
// get there: that is an error naming it.
func (rt *Router) claimSettingsIn(ctx context.Context, sb *sandboxv1beta1.Sandbox) (bool, *httpError) {
	if gk, ok := provenance.ControllerKind(sb); !ok || gk != provenance.SandboxClaim {
		return true, nil
	}
	ref := metav1.GetControllerOf(sb)
	claim, herr := rt.lookupClaim(ctx, sb.Namespace, ref.Name)
	if herr != nil || claim == nil || claim.UID != ref.UID {
		return true, nil // no claim to wait for: proxy as for any sandbox
	}
	return settingsOutcome(sb, claim)
}

// settingsOutcome is claimSettingsIn's answer for sb and the claim that controls it.
func settingsOutcome(sb *sandboxv1beta1.Sandbox, claim *extv1beta1.SandboxClaim) (bool, *httpError) {
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
		herr := errorf(http.StatusServiceUnavailable, "sandbox %s/%s was resumed to answer this request, but SandboxClaim %s cannot "+
			"take its settings (%s: %s); fix it, then retry", sb.Namespace, sb.Name, claim.Name, c.Reason, c.Message)
		herr.retryAfter = wakeFailedRetryAfter
		return false, herr
	}
	return false, nil
}
