package e2b

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// E2B's lifecycle {onTimeout: 'pause', autoResume} (the SDKs send autoPause, autoPauseMemory and
// autoResume: {enabled}) pauses a sandbox when its timeout passes instead of killing it, and with
// autoResume a request to the paused sandbox resumes it. kubox does it with its own mechanisms:
// the claim gets no shutdownTime but an idle policy (spec.idlePolicy) whose suspendAfter is the
// timeout, with running processes ignored (E2B's timeout runs whatever the sandbox runs) and wake
// OnRequest for autoResume, Manual without it (a request is refused until connect); the Sandbox's
// suspendPolicy.keepMemory is set, so the controller's suspend keeps the memory and the files.
// Because a suspend whose memory cannot be kept would drop the root filesystem, create first
// proves, as the caller, that this sandbox's files can be kept (a Filesystem SandboxSnapshot, as
// pause takes; deleted at once) and refuses the sandbox otherwise (docs/e2b.md).

// e2bOnTimeoutAnnotation marks a SandboxClaim E2B's create made with onTimeout pause: its
// timeout (setTimeout, connect) is the idle policy's suspendAfter, never a shutdownTime. Written
// by the caller on their own claim: a tenant who sets it only keeps their own sandbox from being
// deleted at its timeout, which patching the claim's lifecycle does as well.
const e2bOnTimeoutAnnotation = "e2b.kubox.dev/on-timeout"

// e2bOnTimeoutPause is e2bOnTimeoutAnnotation's value (E2B's SandboxOnTimeout "pause").
const e2bOnTimeoutPause = "pause"

// e2bMinPauseTimeout is the shortest timeout of a sandbox with onTimeout pause: the idle policy's
// shortest suspendAfter (api/v1beta1.IdlePolicy). A shorter timeout is raised to it.
const e2bMinPauseTimeout = 30 * time.Second

// e2bLifecycleInfo is E2B's SandboxLifecycle, in getInfo's answer.
type e2bLifecycleInfo struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

// e2bPauseOnTimeout reads the create request's lifecycle: nil when the sandbox is killed at its
// timeout (E2B's default), else whether a request resumes it. What kubox cannot do is refused,
// naming what it offers.
func e2bPauseOnTimeout(req *e2bNewSandbox) (*e2bLifecycleInfo, *httperr.Error) {
	autoResume := req.AutoResume != nil && req.AutoResume.Enabled
	switch {
	case !req.AutoPause && autoResume:
		return nil, httperr.Errorf(http.StatusBadRequest, "autoResume needs lifecycle.onTimeout 'pause' (autoPause): a sandbox killed at its timeout has nothing to resume")
	case !req.AutoPause:
		return nil, nil
	case req.AutoPauseMemory != nil && !*req.AutoPauseMemory:
		return nil, httperr.Errorf(http.StatusBadRequest, "onTimeout {action: 'pause', keepMemory: false} is not supported: kubox's timeout pause is its idle "+
			"policy's suspend, which keeps the memory (and with it the files) or nothing, never the files alone; leave keepMemory at its default "+
			"(true), or call pause({keepMemory: false}) yourself, which keeps the files in a Filesystem SandboxSnapshot")
	}
	return &e2bLifecycleInfo{OnTimeout: e2bOnTimeoutPause, AutoResume: autoResume}, nil
}

// e2bIdlePolicy is the idle policy that pauses a sandbox timeout after its last request (at
// least e2bMinPauseTimeout), woken by a request when autoResume.
func e2bIdlePolicy(timeout time.Duration, autoResume bool) *sandboxv1beta1.IdlePolicy {
	wake := sandboxv1beta1.WakePolicyManual
	if autoResume {
		wake = sandboxv1beta1.WakePolicyOnRequest
	}
	return &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: max(timeout, e2bMinPauseTimeout)},
		RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: wake}
}

// pausesOnTimeout reports whether cl was created with onTimeout pause.
func pausesOnTimeout(cl *extv1beta1.SandboxClaim) bool {
	return cl.Annotations[e2bOnTimeoutAnnotation] == e2bOnTimeoutPause
}

// setPauseOnTimeout makes claim pause at its timeout: no shutdownTime, the idle policy of
// e2bIdlePolicy, and e2bOnTimeoutAnnotation.
func setPauseOnTimeout(claim *extv1beta1.SandboxClaim, timeout time.Duration, lc *e2bLifecycleInfo) {
	claim.Spec.Lifecycle = nil
	claim.Spec.IdlePolicy = e2bIdlePolicy(timeout, lc.AutoResume)
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[e2bOnTimeoutAnnotation] = e2bOnTimeoutPause
}

// armPauseOnTimeout readies the Ready claim cl's sandbox for its timeout pause, as the caller:
// it proves that the sandbox's files can be kept (a Filesystem SandboxSnapshot, as pause takes,
// deleted once Ready: the same 400 as pause when they cannot), then sets the Sandbox's
// suspendPolicy.keepMemory, so the idle policy's suspend keeps the memory and the files.
func (a *API) armPauseOnTimeout(ctx context.Context, c *e2bCaller, cl *extv1beta1.SandboxClaim) *httperr.Error {
	_, sb, herr := a.e2bClaimSandbox(ctx, c, cl.Name)
	if herr != nil {
		return herr
	}
	snap, herr := a.takePauseSnapshot(ctx, cl, sb)
	if herr != nil {
		return httperr.Errorf(herr.Code, "lifecycle.onTimeout 'pause' (autoPause) needs a sandbox whose files a pause keeps, so none "+
			"was created (create it without the lifecycle, or from a template that can keep them): %s", herr.Msg)
	}
	a.dropE2BSnapshot(ctx, snap)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": sb.UID},
		"spec": map[string]any{"suspendPolicy": map[string]bool{"keepMemory": true}}})
	if err := a.kube.Patch(ctx, sb.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return e2bKubeError(err, "keeping the memory of Sandbox "+sb.Name+" across its timeout pause")
	}
	return nil
}

// setPauseTimeout is setTimeout (and connect's timeout) of a sandbox that pauses at its timeout:
// its Sandbox's idlePolicy.suspendAfter becomes timeout (at least e2bMinPauseTimeout), counted
// from now (the last-activity annotation), as the caller.
func (a *API) setPauseTimeout(ctx context.Context, c *e2bCaller, cl *extv1beta1.SandboxClaim, timeout time.Duration) *httperr.Error {
	_, sb, herr := a.e2bClaimSandbox(ctx, c, cl.Name)
	if herr != nil {
		return herr
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": sb.UID, "annotations": map[string]string{
			sandboxv1beta1.LastActivityAnnotation: a.deps.Now().UTC().Format(time.RFC3339)}},
		"spec": map[string]any{"idlePolicy": map[string]any{"suspendAfter": metav1.Duration{Duration: max(timeout, e2bMinPauseTimeout)}}},
	})
	if err := a.kube.Patch(ctx, sb.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return e2bKubeError(err, "setting the timeout (idlePolicy.suspendAfter) of Sandbox "+sb.Name)
	}
	return nil
}

// e2bLifecycleOf is E2B's lifecycle of cl, and the endAt of one that pauses at its timeout: its
// sandbox's last activity the router knows of (a request, its start or resume) plus suspendAfter.
func (a *API) e2bLifecycleOf(ctx context.Context, cl *extv1beta1.SandboxClaim) (e2bLifecycleInfo, time.Time) {
	if !pausesOnTimeout(cl) {
		return e2bLifecycleInfo{OnTimeout: "kill"}, time.Time{}
	}
	info := e2bLifecycleInfo{OnTimeout: e2bOnTimeoutPause}
	sb, _ := a.deps.Sandbox(ctx, cl.Namespace, cl.Status.Sandbox.Name)
	if sb == nil || sb.Spec.IdlePolicy == nil {
		return info, time.Time{}
	}
	info.AutoResume = sb.Spec.IdlePolicy.Wake != sandboxv1beta1.WakePolicyManual
	last := cl.CreationTimestamp.Time
	if t, err := time.Parse(time.RFC3339, sb.Annotations[sandboxv1beta1.LastActivityAnnotation]); err == nil && t.After(last) {
		last = t
	}
	if r := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady); r != nil &&
		r.Status == metav1.ConditionTrue && r.LastTransitionTime.After(last) {
		last = r.LastTransitionTime.Time
	}
	return info, last.Add(sb.Spec.IdlePolicy.SuspendAfter.Duration).UTC()
}
