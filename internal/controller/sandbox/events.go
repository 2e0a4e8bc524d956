package sandbox

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/status"
)

// Lifecycle event reasons of agent-sandbox v1, besides EventExpired.
const (
	// EventPodCreated: the controller created the sandbox's Pod.
	EventPodCreated = "SandboxPodCreated"
	// EventPodCreateFailed: creating the sandbox's Pod failed; the note says why.
	EventPodCreateFailed = "SandboxPodCreateFailed"
	// EventReady: the Sandbox became Ready.
	EventReady = "SandboxReady"
	// EventSuspended: the Sandbox finished suspending (its Pod is gone).
	EventSuspended = "SandboxSuspended"
	// EventPodSucceeded: the sandbox's Pod exited successfully.
	EventPodSucceeded = sandboxv1beta1.SandboxReasonPodSucceeded
	// EventPodFailed: the sandbox's Pod failed.
	EventPodFailed = sandboxv1beta1.SandboxReasonPodFailed
)

// transitionEvents returns the lifecycle events a status change from before to after means:
// Ready turning True, Suspended turning True, Finished turning True. They go out with the status
// write that makes the change (package status), so each transition is reported once.
func transitionEvents(before, after *sandboxv1beta1.SandboxStatus) []status.Event {
	var evs []status.Event
	if c := turnedTrue(before, after, sandboxv1beta1.SandboxConditionReady); c != nil {
		evs = append(evs, status.Event{Type: corev1.EventTypeNormal, Reason: EventReady, Action: "Ready", Note: c.Message})
	}
	if c := turnedTrue(before, after, sandboxv1beta1.SandboxConditionSuspended); c != nil {
		evs = append(evs, status.Event{Type: corev1.EventTypeNormal, Reason: EventSuspended, Action: "Suspend", Note: c.Message})
	}
	if c := turnedTrue(before, after, sandboxv1beta1.SandboxConditionFinished); c != nil {
		typ := corev1.EventTypeNormal
		if c.Reason == sandboxv1beta1.SandboxReasonPodFailed {
			typ = corev1.EventTypeWarning
		}
		evs = append(evs, status.Event{Type: typ, Reason: c.Reason, Action: "Finish", Note: c.Message})
	}
	return evs
}

// turnedTrue returns after's condition of type typ when it is True and before's was not.
func turnedTrue(before, after *sandboxv1beta1.SandboxStatus, typ string) *metav1.Condition {
	c := meta.FindStatusCondition(after.Conditions, typ)
	if c == nil || c.Status != metav1.ConditionTrue || meta.IsStatusConditionTrue(before.Conditions, typ) {
		return nil
	}
	return c
}
