package sandbox

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// progressDelay is how long after a Sandbox's Ready=False/DependenciesNotReady was written the
// further progress of its Pod towards Ready may go unwritten. A Pod that starts within it (kwok,
// a cached image: agent-sandbox measured 2.5-3.5 s) costs its Sandbox two status writes, the
// first observation and Ready; one that takes longer has its progress written at the deadline,
// then every change as before. It is far below the pool's readiness grace period (5 min), which
// counts from the member's creation, not from what its status says.
const progressDelay = 5 * time.Second

// progressDeferral returns how long the write of want over written, the status in the API
// server, may wait: 0 when it must be made now. It may wait, up to progressDelay after Ready
// turned False, when the only news is the Pod's progress towards Ready that no client acts on:
// Ready stays False/DependenciesNotReady (its message changes, "Pod exists with phase: Pending"
// to "Pod is Running but not Ready"), PodScheduled goes from Unknown to True, and nodeName is set.
// What a client does act on is always written at once: Ready turning True, a new Ready reason,
// PodScheduled=False (the pool holds Unschedulable members), podIPs (the claim controller and the
// router use them before Ready), the Service, the agent, observedGeneration, any other condition.
// The status left in place is stale for at most progressDelay, never wrong: PodScheduled=Unknown
// says the controller has not reported scheduling, and the Pod was Pending when it was written.
//
// An unclaimed pool member's first status may wait too, up to progressDelay after the member's
// creation, while its Pod merely starts (firstStatusDeferral).
func progressDeferral(sb *sandboxv1beta1.Sandbox, want *sandboxv1beta1.SandboxStatus, now time.Time) time.Duration {
	written := &sb.Status
	if len(written.Conditions) == 0 {
		return firstStatusDeferral(sb, want, now)
	}
	was := meta.FindStatusCondition(written.Conditions, sandboxv1beta1.SandboxConditionReady)
	is := meta.FindStatusCondition(want.Conditions, sandboxv1beta1.SandboxConditionReady)
	if was == nil || is == nil || was.Status != metav1.ConditionFalse || !sameState(was, is) ||
		was.Reason != sandboxv1beta1.SandboxReasonDependenciesNotReady {
		return 0
	}
	left := was.LastTransitionTime.Add(progressDelay).Sub(now)
	if left <= 0 || !onlyProgress(written, want) {
		return 0
	}
	return left
}

// firstStatusDeferral returns how long the first status of sb may wait: up to progressDelay after
// sb's creation when sb is a pool member no claim has taken and want says no more than that its
// Pod is on its way (Ready False/DependenciesNotReady, PodScheduled not False or False/PodAbsent,
// Suspended False, no other condition, no podIPs). No client waits on such a member: the pool
// counts it as not Ready from its creation whatever its status holds, and claims take Ready
// members only. A Pod that starts within the delay costs the member one status write, Ready,
// instead of two. An unschedulable Pod, a Pod with an IP, an error or any other reason is written
// at once, as is every Sandbox of a user or a claim.
func firstStatusDeferral(sb *sandboxv1beta1.Sandbox, want *sandboxv1beta1.SandboxStatus, now time.Time) time.Duration {
	if _, member := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]; !member || len(want.PodIPs) > 0 {
		return 0
	}
	for i := range want.Conditions {
		c := &want.Conditions[i]
		switch {
		case c.Type == sandboxv1beta1.SandboxConditionReady && c.Status == metav1.ConditionFalse &&
			c.Reason == sandboxv1beta1.SandboxReasonDependenciesNotReady:
		case c.Type == sandboxv1beta1.SandboxConditionPodScheduled &&
			(c.Status != metav1.ConditionFalse || c.Reason == sandboxv1beta1.SandboxReasonPodAbsent):
			// No Pod yet (PodAbsent, agent-sandbox v1.0.13) is no scheduling problem either.
		case c.Type == sandboxv1beta1.SandboxConditionSuspended && c.Status == metav1.ConditionFalse:
		default:
			return 0
		}
	}
	if !meta.IsStatusConditionFalse(want.Conditions, sandboxv1beta1.SandboxConditionReady) {
		return 0
	}
	return max(0, sb.CreationTimestamp.Add(progressDelay).Sub(now))
}

// onlyProgress reports whether want differs from written in nothing but the Ready message,
// PodScheduled going from Unknown to True, and nodeName.
func onlyProgress(written, want *sandboxv1beta1.SandboxStatus) bool {
	if len(written.Conditions) != len(want.Conditions) {
		return false
	}
	for i := range want.Conditions {
		is := &want.Conditions[i]
		was := meta.FindStatusCondition(written.Conditions, is.Type)
		switch {
		case was == nil:
			return false
		case is.Type == sandboxv1beta1.SandboxConditionReady:
			// Checked by progressDeferral: the same status and reason; the message may change.
		case is.Type == sandboxv1beta1.SandboxConditionPodScheduled && was.Status == metav1.ConditionUnknown &&
			is.Status == metav1.ConditionTrue && was.ObservedGeneration == is.ObservedGeneration:
		case !sameState(was, is) || was.Message != is.Message:
			return false
		}
	}
	a, b := *written, *want
	a.Conditions, b.Conditions = nil, nil
	a.NodeName, b.NodeName = "", ""
	return equality.Semantic.DeepEqual(a, b)
}

// sameState reports whether two conditions of a type have the same status and reason for the
// same generation.
func sameState(a, b *metav1.Condition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.ObservedGeneration == b.ObservedGeneration
}
