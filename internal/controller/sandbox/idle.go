package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/agentclient"
	"github.com/kubox-dev/kubox/internal/metrics"
	"github.com/kubox-dev/kubox/internal/provenance"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// The idle policy (spec.idlePolicy): the controller looks at a Running, Ready sandbox when
// suspendAfter has passed since the latest activity it knows of (the router's last-activity
// annotation, status.idle.lastActiveTime, the Ready condition turning True). It then asks the
// sandbox's kubox-agent whether anything is going on; if nothing is, it suspends the sandbox.
// Between those moments it only requeues at the next deadline: no polling, and a status write
// only when the check finds activity.

// EventIdleSuspended is the reason of the event the controller records when it suspends a sandbox
// for its idle policy.
const EventIdleSuspended = "SandboxIdleSuspended"

const (
	// agentActivityTimeout bounds one GetActivity call: the agent answers from memory, so a
	// slower answer means an agent in trouble, treated as unreachable.
	agentActivityTimeout = 3 * time.Second
	// agentRetry is how soon an unreachable agent is asked again. It never suspends the
	// sandbox, so the check must come back.
	agentRetry = 15 * time.Second
	// maxIdleMessage is status.idle.message's length limit in the CRD.
	maxIdleMessage = 1024
)

// ActivityReader asks a sandbox's kubox-agent what is going on in it. The Reconciler's is an
// agentActivity; unit tests give a fake.
type ActivityReader interface {
	GetActivity(ctx context.Context, sb *sandboxv1beta1.Sandbox) (*agentv1.GetActivityResponse, error)
}

// agentActivity calls ActivityService.GetActivity on the sandbox's agent (agentclient).
type agentActivity struct {
	agents  *agentclient.Dialer
	timeout time.Duration
}

// newAgentActivity returns the ActivityReader of a controller whose agent tokens derive from key.
func newAgentActivity(key []byte) *agentActivity {
	return &agentActivity{agents: agentclient.New(key), timeout: agentActivityTimeout}
}

// GetActivity implements ActivityReader.
func (a *agentActivity) GetActivity(ctx context.Context, sb *sandboxv1beta1.Sandbox) (*agentv1.GetActivityResponse, error) {
	hc, base, err := a.agents.Endpoint(sb)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	resp, err := agentv1connect.NewActivityServiceClient(hc, base).GetActivity(ctx, connect.NewRequest(&agentv1.GetActivityRequest{}))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

// idleVerdict is what one pass decided about a sandbox's idle policy.
type idleVerdict struct {
	// status is the status.idle the pass writes.
	status *sandboxv1beta1.IdleStatus
	// suspend asks the pass to suspend the sandbox for its idle policy.
	suspend bool
	// requeue is when to look at the sandbox again; 0: its next change will tell.
	requeue time.Duration
}

// askAgent asks the sandbox's agent for its activity; nil for a sandbox without an agent.
type askAgent func() (*agentv1.GetActivityResponse, error)

// decideIdle applies sb's idle policy at now. ask is called only when the deadline has come.
func decideIdle(sb *sandboxv1beta1.Sandbox, now time.Time, ask askAgent) idleVerdict {
	policy, prev := sb.Spec.IdlePolicy, sb.Status.Idle
	keep := idleVerdict{status: prev}
	switch {
	case policy == nil:
		return idleVerdict{}
	case suspended(sb):
		return suspendedVerdict(sb)
	case prev != nil && prev.Reason == sandboxv1beta1.IdleReasonSuspended:
		// Resumed after an idle suspend: whoever resumed it (a request through the router, as
		// a rule) is the latest activity.
		return idleVerdict{status: idleStatus(now, sandboxv1beta1.IdleReasonRequests, "Resumed after an idle suspend")}
	case unclaimedWarmMember(sb):
		if prev != nil && prev.Reason == sandboxv1beta1.IdleReasonWaitingInPool {
			return keep
		}
		return idleVerdict{status: &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonWaitingInPool,
			Message: "Waiting unclaimed in a warm pool: the idle policy applies once the sandbox is claimed"}}
	case !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady):
		return keep
	case prev == nil || prev.LastActiveTime == nil:
		// The clock starts now: at the sandbox's first Ready, its claim, or the policy's arrival
		// on a sandbox that has long been Ready.
		return idleVerdict{status: idleStatus(now, sandboxv1beta1.IdleReasonIdle, fmt.Sprintf(
			"Watching for activity; suspends after %s without any", policy.SuspendAfter.Duration)),
			requeue: policy.SuspendAfter.Duration}
	}
	last := lastActive(sb)
	if deadline := last.Add(policy.SuspendAfter.Duration); now.Before(deadline) {
		keep.requeue = deadline.Sub(now)
		return keep
	}
	return judgeActivity(sb, last, now, ask)
}

// suspendedVerdict is the status.idle of a suspended sandbox: Suspended when the idle policy did
// it, what it was otherwise.
func suspendedVerdict(sb *sandboxv1beta1.Sandbox) idleVerdict {
	prev := sb.Status.Idle
	if sb.Annotations[sandboxv1beta1.SuspendedByAnnotation] != sandboxv1beta1.SuspendedByIdle ||
		(prev != nil && prev.Reason == sandboxv1beta1.IdleReasonSuspended) {
		return idleVerdict{status: prev}
	}
	st := &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonSuspended,
		Message: fmt.Sprintf("Suspended after %s without activity", sb.Spec.IdlePolicy.SuspendAfter.Duration)}
	if prev != nil {
		st.LastActiveTime = prev.LastActiveTime
	}
	return idleVerdict{status: st}
}

// judgeActivity decides, at the deadline, from what the agent says: activity keeps the sandbox
// Running until now + suspendAfter, none suspends it, and no answer leaves it Running.
func judgeActivity(sb *sandboxv1beta1.Sandbox, last, now time.Time, ask askAgent) idleVerdict {
	after := sb.Spec.IdlePolicy.SuspendAfter.Duration
	active := func(reason, msg string) idleVerdict {
		return idleVerdict{status: idleStatus(now, reason, msg), requeue: after}
	}
	var act *agentv1.GetActivityResponse
	if ask != nil {
		var err error
		act, err = ask()
		switch {
		case connect.CodeOf(err) == connect.CodeUnimplemented:
			// An agent older than ActivityService: router activity only, as without an agent.
			act = nil
		case err != nil:
			st := &sandboxv1beta1.IdleStatus{LastActiveTime: sb.Status.Idle.LastActiveTime,
				Reason: sandboxv1beta1.IdleReasonAgentUnreachable, Message: limitMessage(fmt.Sprintf(
					"No activity seen since %s, but kubox-agent did not answer, so the sandbox stays Running: %v",
					last.UTC().Format(time.RFC3339), err))}
			return idleVerdict{status: st, requeue: agentRetry}
		}
	}
	switch {
	case act.GetOpenRequests() > 0:
		return active(sandboxv1beta1.IdleReasonOpenConnections, fmt.Sprintf("%d requests open to kubox-agent", act.GetOpenRequests()))
	case act.GetLastRequestTime() != nil && act.GetLastRequestTime().AsTime().After(last):
		return active(sandboxv1beta1.IdleReasonRequests, "kubox-agent served a request at "+
			act.GetLastRequestTime().AsTime().UTC().Format(time.RFC3339))
	case act.GetRunningProcessCount() > 0 && sb.Spec.IdlePolicy.RunningProcesses != sandboxv1beta1.IdleProcessPolicyIgnore:
		return active(sandboxv1beta1.IdleReasonRunningProcesses, processesMessage(act))
	}
	return idleVerdict{suspend: true, status: &sandboxv1beta1.IdleStatus{LastActiveTime: sb.Status.Idle.LastActiveTime,
		Reason: sandboxv1beta1.IdleReasonSuspended, Message: fmt.Sprintf("Suspended after %s without activity", after)}}
}

// lastActive is the latest activity the controller knows of: the router's annotation, the last
// check that found activity, the Ready condition turning True (a start or a resume).
func lastActive(sb *sandboxv1beta1.Sandbox) time.Time {
	var last time.Time
	if t, err := time.Parse(time.RFC3339, sb.Annotations[sandboxv1beta1.LastActivityAnnotation]); err == nil {
		last = t
	}
	if idle := sb.Status.Idle; idle != nil && idle.LastActiveTime != nil && idle.LastActiveTime.After(last) {
		last = idle.LastActiveTime.Time
	}
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady); c != nil &&
		c.Status == metav1.ConditionTrue && c.LastTransitionTime.After(last) {
		last = c.LastTransitionTime.Time
	}
	return last
}

// unclaimedWarmMember reports whether sb waits in a warm pool for a claim: such a sandbox never
// suspends, or the pool would hand out suspended sandboxes.
func unclaimedWarmMember(sb *sandboxv1beta1.Sandbox) bool {
	if _, member := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]; !member {
		return false
	}
	if _, claimed := sb.Labels[sandboxv1beta1.ClaimUIDLabel]; claimed {
		return false
	}
	gk, ok := provenance.ControllerKind(sb)
	return !ok || gk != provenance.SandboxClaim
}

func idleStatus(now time.Time, reason, msg string) *sandboxv1beta1.IdleStatus {
	t := metav1.NewTime(now)
	return &sandboxv1beta1.IdleStatus{LastActiveTime: &t, Reason: reason, Message: limitMessage(msg)}
}

// processesMessage names the processes that keep the sandbox awake.
func processesMessage(act *agentv1.GetActivityResponse) string {
	names := make([]string, 0, len(act.GetRunningProcesses()))
	for _, p := range act.GetRunningProcesses() {
		names = append(names, fmt.Sprintf("%s (pid %d)", p.GetCommand(), p.GetPid()))
	}
	msg := fmt.Sprintf("%d processes running: %s", act.GetRunningProcessCount(), strings.Join(names, ", "))
	if n := int(act.GetRunningProcessCount()) - len(names); n > 0 {
		msg += fmt.Sprintf(" and %d more", n)
	}
	return limitMessage(msg)
}

func limitMessage(msg string) string {
	if len(msg) <= maxIdleMessage {
		return msg
	}
	return strings.ToValidUTF8(msg[:maxIdleMessage-3], "") + "..."
}

// checkIdle applies sb's idle policy in this pass: it records the status.idle to write in obs
// and, when the sandbox is to suspend, patches sb (which then holds the patched Sandbox, so the
// rest of the pass deletes its Pod). It returns when to look at sb again for the policy.
func (r *Reconciler) checkIdle(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) (time.Duration, error) {
	if err := r.clearSuspendedBy(ctx, sb); err != nil {
		return 0, err
	}
	var ask askAgent
	if sb.Spec.Agent != nil {
		ask = func() (*agentv1.GetActivityResponse, error) { return r.activity.GetActivity(ctx, sb) }
	}
	v := decideIdle(sb, r.clock.Now(), ask)
	obs.idle = v.status
	if !v.suspend {
		return v.requeue, nil
	}
	return 0, r.suspendIdle(ctx, sb, obs)
}

// errIdleConflict: the Sandbox changed since the pass read it (a request's last-activity, a user's
// change) or is gone; the pass stops and the newer version decides.
var errIdleConflict = errors.New("the Sandbox changed while being suspended for its idle policy")

// suspendIdle sets operatingMode Suspended and the suspended-by annotation in one patch, at the
// resourceVersion the pass read: a request that came meanwhile wrote the last-activity
// annotation, so the patch fails and the sandbox stays.
func (r *Reconciler) suspendIdle(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	base := sb.DeepCopy()
	sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	sb.Annotations[sandboxv1beta1.SuspendedByAnnotation] = sandboxv1beta1.SuspendedByIdle
	err := r.client.Patch(ctx, sb, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
	switch {
	case err == nil:
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		*sb = *base
		return errIdleConflict
	default:
		*sb = *base
		return fmt.Errorf("suspending Sandbox %s for its idle policy: %w", sb.Name, err)
	}
	r.recorder.Eventf(sb, nil, corev1.EventTypeNormal, EventIdleSuspended, "Suspend", "%s", obs.idle.Message)
	return nil
}

// clearSuspendedBy removes the suspended-by annotation from a Running sandbox. kubox-router
// removes it when it wakes the sandbox, but a resume by any other client (kubox resume, the SDK,
// kubectl) leaves it, and a later suspend by a user would then pass for the idle policy's.
func (r *Reconciler) clearSuspendedBy(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	if _, set := sb.Annotations[sandboxv1beta1.SuspendedByAnnotation]; !set || suspended(sb) {
		return nil
	}
	patch := mustJSON(map[string]any{"metadata": map[string]any{
		"resourceVersion": sb.ResourceVersion,
		"annotations":     map[string]any{sandboxv1beta1.SuspendedByAnnotation: nil},
	}})
	err := r.client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return errIdleConflict
	case err != nil:
		return fmt.Errorf("removing %s from Sandbox %s: %w", sandboxv1beta1.SuspendedByAnnotation, sb.Name, err)
	}
	return nil
}

// countSuspends updates the suspend metrics for a status write that turned before into after:
// a sandbox that starts suspending counts once, for its idle policy or its user, and one
// resumed after an idle suspend adds the time it spent suspended.
func countSuspends(sb *sandboxv1beta1.Sandbox, before, after *sandboxv1beta1.SandboxStatus, now time.Time) {
	if notSuspendedIn(before) && !notSuspendedIn(after) {
		reason := metrics.SuspendReasonUser
		if sb.Annotations[sandboxv1beta1.SuspendedByAnnotation] == sandboxv1beta1.SuspendedByIdle {
			reason = metrics.SuspendReasonIdle
		}
		metrics.CountSandboxSuspend(reason)
	}
	if before.Idle != nil && before.Idle.Reason == sandboxv1beta1.IdleReasonSuspended &&
		(after.Idle == nil || after.Idle.Reason != sandboxv1beta1.IdleReasonSuspended) {
		if c := meta.FindStatusCondition(before.Conditions, sandboxv1beta1.SandboxConditionSuspended); c != nil && c.Status == metav1.ConditionTrue {
			metrics.AddIdleSuspended(now.Sub(c.LastTransitionTime.Time))
		}
	}
}

// notSuspendedIn reports whether st says the sandbox runs (Suspended=False/NotSuspended).
func notSuspendedIn(st *sandboxv1beta1.SandboxStatus) bool {
	c := meta.FindStatusCondition(st.Conditions, sandboxv1beta1.SandboxConditionSuspended)
	return c != nil && c.Reason == sandboxv1beta1.SandboxReasonNotSuspended
}
