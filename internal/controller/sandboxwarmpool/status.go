package sandboxwarmpool

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// counts summarizes the members a pass observed.
type counts struct {
	desired, members, ready, updated int
	// unschedulable are the members not Ready whose Pod cannot be scheduled.
	unschedulable []*member
}

func countMembers(pool *extv1beta1.SandboxWarmPool, obs *observed) counts {
	c := counts{desired: int(pool.Spec.DesiredReplicas()), members: len(obs.members)}
	for i := range obs.members {
		m := &obs.members[i]
		if m.ready {
			c.ready++
		}
		if obs.template != nil && !m.stale {
			c.updated++
		}
		if !m.ready && m.unschedulable {
			c.unschedulable = append(c.unschedulable, m)
		}
	}
	return c
}

// computeStatus returns the pool's status given what this pass observed. It is a pure function of
// pool and obs, except for condition transition times: a condition keeps its time while its
// status stays the same, and the Progressing condition's time is when the pool last started, or
// made, progress (progressdeadlineseconds.go).
func computeStatus(pool *extv1beta1.SandboxWarmPool, obs *observed, now time.Time) (extv1beta1.SandboxWarmPoolStatus, progress) {
	c := countMembers(pool, obs)
	st := extv1beta1.SandboxWarmPoolStatus{
		Replicas:           int32(c.members),
		ReadyReplicas:      int32(c.ready),
		UpdatedReplicas:    int32(c.updated),
		Selector:           extv1beta1.WarmPoolSelector(pool.Name),
		ObservedGeneration: pool.Generation,
		Conditions:         append([]metav1.Condition(nil), pool.Status.Conditions...),
	}
	ready := readyCondition(pool, obs, c)
	prev := meta.FindStatusCondition(pool.Status.Conditions, extv1beta1.WarmPoolConditionReady)
	ready.LastTransitionTime = metav1.NewTime(now)
	if prev != nil && prev.Status == ready.Status {
		ready.LastTransitionTime = prev.LastTransitionTime
	}
	setCondition(&st.Conditions, pool.Generation, ready)
	prog := progressingCondition(pool, obs, c, now)
	setCondition(&st.Conditions, pool.Generation, prog.condition)
	return st, prog
}

// setCondition replaces the condition of c's type, or adds it, with the pool's generation. Unlike
// meta.SetStatusCondition it takes c's transition time as it is.
func setCondition(conds *[]metav1.Condition, generation int64, c metav1.Condition) {
	c.ObservedGeneration = generation
	for i := range *conds {
		if (*conds)[i].Type == c.Type {
			(*conds)[i] = c
			return
		}
	}
	*conds = append(*conds, c)
}

// readyCondition is True when the pool has as many Ready members as spec.replicas.
func readyCondition(pool *extv1beta1.SandboxWarmPool, obs *observed, c counts) metav1.Condition {
	cond := metav1.Condition{Type: extv1beta1.WarmPoolConditionReady, Status: metav1.ConditionFalse}
	switch {
	case obs.template == nil:
		cond.Reason = extv1beta1.WarmPoolReasonTemplateNotFound
		cond.Message = templateNotFoundMessage(pool)
	case c.ready >= c.desired:
		cond.Status, cond.Reason = metav1.ConditionTrue, extv1beta1.WarmPoolReasonReplicasReady
		cond.Message = readyMessage(c)
	case len(obs.errs) > 0:
		cond.Reason = extv1beta1.WarmPoolReasonReconcilerError
		cond.Message = errorMessage(obs.errs)
	case len(c.unschedulable) > 0:
		cond.Reason = extv1beta1.WarmPoolReasonMembersUnschedulable
		cond.Message = readyMessage(c) + "; " + unschedulableMessage(c.unschedulable)
	default:
		cond.Reason = extv1beta1.WarmPoolReasonReplicasNotReady
		cond.Message = readyMessage(c)
	}
	return cond
}

func templateNotFoundMessage(pool *extv1beta1.SandboxWarmPool) string {
	return fmt.Sprintf("SandboxTemplate %s does not exist; the pool creates its members once it does",
		pool.Spec.SandboxTemplateRef.Name)
}

func readyMessage(c counts) string {
	return fmt.Sprintf("%d of %d members are ready", c.ready, c.desired)
}

func errorMessage(errs []error) string {
	return "Error seen: " + errors.Join(errs...).Error()
}

// unschedulableMessage says which members cannot be scheduled (the first three by name) and why,
// from the first one's Pod.
func unschedulableMessage(ms []*member) string {
	ms = slices.SortedFunc(slices.Values(ms), func(a, b *member) int { return strings.Compare(a.sandbox.Name, b.sandbox.Name) })
	names := make([]string, 0, min(len(ms), 3))
	for _, m := range ms[:min(len(ms), 3)] {
		names = append(names, m.sandbox.Name)
	}
	list := strings.Join(names, ", ")
	if len(ms) > len(names) {
		list += fmt.Sprintf(" and %d more", len(ms)-len(names))
	}
	why := ""
	if msg := ms[0].schedulingMessage; msg != "" {
		why = ": " + msg
	}
	return fmt.Sprintf("%d cannot be scheduled (%s)%s; the pool keeps them, rather than replacing them, until the cluster can place them",
		len(ms), list, why)
}
