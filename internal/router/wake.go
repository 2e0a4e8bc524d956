package router

import (
	"context"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/provenance"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/e2b"
	"github.com/kubox-dev/kubox/internal/router/httperr"
	"github.com/kubox-dev/kubox/internal/router/metrics"
	"github.com/kubox-dev/kubox/internal/router/wake"
)

// wakeIfSuspended lets a request reach sb: when sb is suspended and its idle policy wakes it on
// request, and the caller may resume it, the waker resumes it and this returns the sandbox once
// it is Ready (as the cache has it then); a sandbox that is not suspended is returned as it is.
// A sandbox requests do not wake is refused: on an E2B host (rte.e2b) with E2B's own answer.
func (rt *Router) wakeIfSuspended(ctx context.Context, p *principal, rte *route, sb *sandboxv1beta1.Sandbox) (*sandboxv1beta1.Sandbox, *httpError) {
	// A request that comes while a wake is in flight waits for it, also once the cache shows
	// the sandbox Running but not yet Ready: it resumes nothing, so it needs no more than the
	// connect permission it has.
	if !rt.waker.Waking(sb.UID) {
		if !wake.IsSuspended(sb) {
			return sb, nil
		}
		if herr := wake.CheckPolicy(sb); herr != nil {
			if rte.e2b {
				return nil, e2b.PausedError(rte.name, sb) // E2B's answer, not the /claims/ route's 503
			}
			return nil, herr
		}
		if herr := rt.authorizeWake(ctx, p, sb); herr != nil {
			if herr.Code == http.StatusForbidden {
				rt.metrics.Wakes.WithLabelValues(metrics.WakeForbidden).Inc()
			}
			return nil, herr
		}
	}
	start := infoFrom(ctx).start
	if start.IsZero() {
		start = rt.now()
	}
	herr := rt.waker.Wait(ctx, sb)
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
	case herr.Code == http.StatusGatewayTimeout:
		rt.metrics.Wakes.WithLabelValues(metrics.WakeTimeout).Inc()
	case herr.Code != httperr.StatusClientClosedRequest:
		rt.metrics.Wakes.WithLabelValues(metrics.WakeFailed).Inc()
	}
}

// resumeSandbox is the waker's resume: the lifecycle writer's one write of a wake, then the
// activity tracker learns the last activity it set.
func (rt *Router) resumeSandbox(ctx context.Context, sb *sandboxv1beta1.Sandbox, at time.Time) (int64, error) {
	gen, err := rt.lifecycle.Resume(ctx, sb, at)
	if err != nil {
		return 0, err
	}
	rt.activity.Written(sb.UID, at)
	rt.log.Info("Resumed a suspended sandbox for a request", "namespace", sb.Namespace, "name", sb.Name, "generation", gen)
	return gen, nil
}

// serving reports whether sb, which the cache shows Ready for the generation the router resumed,
// can take the requests held for it: its live Pod is in the cache, and the settings of the claim
// that owns it are in that Pod (wake.SettingsOutcome).
func (rt *Router) serving(ctx context.Context, sb *sandboxv1beta1.Sandbox) (bool, *httpError) {
	if !rt.podReady(ctx, sb) {
		return false, nil
	}
	if gk, ok := provenance.ControllerKind(sb); !ok || gk != provenance.SandboxClaim {
		return true, nil
	}
	ref := metav1.GetControllerOf(sb)
	claim, herr := rt.lookupClaim(ctx, sb.Namespace, ref.Name)
	if herr != nil || claim == nil || claim.UID != ref.UID {
		return true, nil // no claim to wait for: proxy as for any sandbox
	}
	return wake.SettingsOutcome(sb, claim)
}
