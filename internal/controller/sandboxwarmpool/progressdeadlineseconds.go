package sandboxwarmpool

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// progress is the pool's Progressing condition and when its deadline falls due.
type progress struct {
	condition metav1.Condition
	// deadlineIn is how long until the progress deadline passes, while the pool is progressing;
	// 0 otherwise.
	deadlineIn time.Duration
	// exceeded: the condition turned False/ProgressDeadlineExceeded in this pass.
	exceeded bool
}

// progressingCondition implements spec.progressDeadlineSeconds. The pool's goal is spec.replicas
// members, all Ready and, unless updateStrategy is OnReplenish (which replaces stale members only
// as they are claimed), all built from the current template. While it is short of its goal,
// Progressing is True/ReplicasUpdating, and its transition time is when the pool started towards
// the goal; progress is a member built from the current template being created or becoming
// Ready. With no progress for progressDeadlineSeconds it turns False/ProgressDeadlineExceeded,
// and back to True with the next progress.
func progressingCondition(pool *extv1beta1.SandboxWarmPool, obs *observed, c counts, now time.Time) progress {
	cond := metav1.Condition{Type: extv1beta1.WarmPoolConditionProgressing}
	prev := meta.FindStatusCondition(pool.Status.Conditions, extv1beta1.WarmPoolConditionProgressing)
	since := func(status metav1.ConditionStatus) metav1.Time {
		if prev != nil && prev.Status == status && prev.Reason == cond.Reason {
			return prev.LastTransitionTime
		}
		return metav1.NewTime(now)
	}
	complete := c.members == c.desired && c.ready == c.desired &&
		(c.updated == c.members || pool.Spec.UpdateStrategy.StrategyType() == extv1beta1.WarmPoolUpdateStrategyOnReplenish)
	switch {
	case obs.template == nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, extv1beta1.WarmPoolReasonTemplateNotFound, templateNotFoundMessage(pool)
	case complete:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, extv1beta1.WarmPoolReasonReplicasUpToDate, upToDateMessage(c)
	case len(obs.errs) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, extv1beta1.WarmPoolReasonReconcilerError, errorMessage(obs.errs)
	default:
		return updating(pool, prev, c, lastProgress(obs), now)
	}
	cond.LastTransitionTime = since(cond.Status)
	return progress{condition: cond}
}

// updating is the Progressing condition of a pool short of its goal whose last progress was at
// last (zero when none is visible).
func updating(pool *extv1beta1.SandboxWarmPool, prev *metav1.Condition, c counts, last, now time.Time) progress {
	deadline := pool.Spec.ProgressDeadline()
	cond := metav1.Condition{Type: extv1beta1.WarmPoolConditionProgressing, Status: metav1.ConditionTrue,
		Reason: extv1beta1.WarmPoolReasonReplicasUpdating, Message: updatingMessage(c), LastTransitionTime: metav1.NewTime(now)}
	switch {
	case prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == extv1beta1.WarmPoolReasonReplicasUpdating:
		cond.LastTransitionTime = prev.LastTransitionTime
		from := prev.LastTransitionTime.Time
		if last.After(from) {
			from = last
		}
		if left := from.Add(deadline).Sub(now); left > 0 {
			return progress{condition: cond, deadlineIn: left}
		}
		cond.Status, cond.Reason, cond.LastTransitionTime = metav1.ConditionFalse, extv1beta1.WarmPoolReasonProgressDeadlineExceeded, metav1.NewTime(now)
		cond.Message = fmt.Sprintf("The pool made no progress for %v: %s", deadline, cond.Message)
		return progress{condition: cond, exceeded: true}
	case prev != nil && prev.Reason == extv1beta1.WarmPoolReasonProgressDeadlineExceeded && !last.After(prev.LastTransitionTime.Time):
		// Still no progress since the deadline passed.
		cond.Status, cond.Reason, cond.LastTransitionTime = metav1.ConditionFalse, extv1beta1.WarmPoolReasonProgressDeadlineExceeded, prev.LastTransitionTime
		cond.Message = fmt.Sprintf("The pool made no progress for %v: %s", deadline, cond.Message)
		return progress{condition: cond}
	}
	// Starting towards a new goal, or progressing again after the deadline passed.
	return progress{condition: cond, deadlineIn: deadline}
}

// lastProgress is when a member built from the current template was last created or became
// Ready; zero when there is none.
func lastProgress(obs *observed) time.Time {
	var last time.Time
	for i := range obs.members {
		m := &obs.members[i]
		if m.stale {
			continue
		}
		for _, t := range []time.Time{m.sandbox.CreationTimestamp.Time, m.readySince} {
			if t.After(last) {
				last = t
			}
		}
	}
	return last
}

func upToDateMessage(c counts) string {
	if c.updated < c.members {
		return fmt.Sprintf("%d members are ready; %d of them are built from an older template and are replaced as they are claimed (updateStrategy OnReplenish)",
			c.members, c.members-c.updated)
	}
	return fmt.Sprintf("%d members are ready and built from the current template", c.members)
}

func updatingMessage(c counts) string {
	return fmt.Sprintf("%d members, %d ready, %d built from the current template; %d ready and up to date wanted",
		c.members, c.ready, c.updated, c.desired)
}
