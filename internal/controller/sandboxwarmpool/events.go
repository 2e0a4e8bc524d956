package sandboxwarmpool

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// recordDeletions records one event per reason for the members this pass deleted on purpose;
// excess members going after a scale-down are not worth an event each time.
func (o *observed) recordDeletions(dels []deletion, grace time.Duration, strategy extv1beta1.WarmPoolUpdateStrategyType) {
	byReason := map[deleteReason][]string{}
	for _, d := range dels {
		byReason[d.reason] = append(byReason[d.reason], d.member.sandbox.Name)
	}
	if names := byReason[deleteNotReady]; len(names) > 0 {
		o.recordAction(corev1.EventTypeNormal, EventReplacedNotReady, "Replace",
			fmt.Sprintf("Replacing %d members not Ready within %v or whose Pod terminated: %s", len(names), grace, nameList(names)))
	}
	if names := byReason[deleteTampered]; len(names) > 0 {
		o.recordAction(corev1.EventTypeWarning, EventDeletedTampered, "Replace",
			fmt.Sprintf("Replacing %d members whose spec is not the one the pool created (someone changed it): %s", len(names), nameList(names)))
	}
	if names := byReason[deleteStale]; len(names) > 0 {
		o.recordAction(corev1.EventTypeNormal, EventDeletedStale, "Replace",
			fmt.Sprintf("Replacing %d members built from an older template (updateStrategy %s): %s", len(names), strategy, nameList(names)))
	}
}

// conditionEvents returns the events announcing the condition changes from before to after: members
// becoming unschedulable or schedulable again, and the progress deadline passing.
func conditionEvents(before, after extv1beta1.SandboxWarmPoolStatus, prog progress) []poolEvent {
	var evs []poolEvent
	wasHeld := readyReason(before) == extv1beta1.WarmPoolReasonMembersUnschedulable
	isHeld := readyReason(after) == extv1beta1.WarmPoolReasonMembersUnschedulable
	switch {
	case isHeld && !wasHeld:
		c := meta.FindStatusCondition(after.Conditions, extv1beta1.WarmPoolConditionReady)
		evs = append(evs, poolEvent{corev1.EventTypeWarning, EventMembersUnschedulable, "Hold", c.Message})
	case wasHeld && !isHeld:
		evs = append(evs, poolEvent{corev1.EventTypeNormal, EventMembersSchedulable, "Hold", "No member is unschedulable any more"})
	}
	if prog.exceeded {
		evs = append(evs, poolEvent{corev1.EventTypeWarning, EventProgressDeadlineExceeded, "Progress", prog.condition.Message})
	}
	return evs
}

func readyReason(st extv1beta1.SandboxWarmPoolStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, extv1beta1.WarmPoolConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// nameList lists up to five names, and how many more there are.
func nameList(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
