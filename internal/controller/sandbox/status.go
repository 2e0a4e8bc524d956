package sandbox

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/status"
)

// observed is what one reconcile pass saw of a Sandbox's children and what went wrong.
type observed struct {
	// pod is the Pod the Sandbox controls, or nil.
	pod *corev1.Pod
	// ownedPods counts the Pods controlled by the Sandbox; more than one is an error.
	ownedPods int
	// foreignPod is true when a Pod the Sandbox does not control holds its name.
	foreignPod bool
	// service is the Service the Sandbox controls, or nil.
	service *corev1.Service
	// expired is true when shutdownTime has passed.
	expired bool
	// err is the first error of the pass, reported as Ready=False/ReconcilerError.
	err error
	// events are emitted once the status is written (package status); actions, events about
	// what the pass did that no later pass sees again (a Pod it created), at once.
	events, actions []status.Event
	// idle is the status.idle the idle policy's check decided (idle.go).
	idle *sandboxv1beta1.IdleStatus
	// requeueAfter, when not 0, is when a pass must look again (a restore's deadline).
	requeueAfter time.Duration
	// snapshotWait says why the Pod that starts from spec.snapshotRef is not created yet;
	// restoreFailed, why it could not start from it.
	snapshotWait, restoreFailed string
}

// record adds an event about the Sandbox, and related when not nil, to emit once the status is
// written.
func (o *observed) record(related runtime.Object, eventType, reason, action, note string) {
	o.events = append(o.events, status.Event{Related: related, Type: eventType, Reason: reason, Action: action, Note: note})
}

// recordAction adds an event about something the pass did, and related when not nil, to emit
// whatever becomes of the status write.
func (o *observed) recordAction(related runtime.Object, eventType, reason, action, note string) {
	o.actions = append(o.actions, status.Event{Related: related, Type: eventType, Reason: reason, Action: action, Note: note})
}

// computeStatus returns the status of sb given what this pass observed. It is a pure function:
// every field comes from obs and sb.Spec, except condition transition times, which are kept
// when a condition's status does not change, and the Finished condition, which keeps an earlier
// Pod's outcome (finishedCondition).
func computeStatus(sb *sandboxv1beta1.Sandbox, obs *observed, clusterDomain string, now metav1.Time) sandboxv1beta1.SandboxStatus {
	st := sandboxv1beta1.SandboxStatus{
		ObservedGeneration: sb.Generation,
		PreviewID:          contract.PreviewID(sb.UID),
		Conditions:         append([]metav1.Condition(nil), sb.Status.Conditions...),
		// Once set, the selector stays while no Pod exists (suspended, expired, between Pods),
		// as agent-sandbox v1 keeps it: clients find the sandbox's Pods by it at any time.
		LabelSelector: sb.Status.LabelSelector,
		Idle:          obs.idle,
		Memory:        sb.Status.Memory,
		Usage:         sb.Status.Usage,
	}
	gen := sb.Generation
	set := func(c metav1.Condition) {
		c.ObservedGeneration = gen
		c.LastTransitionTime = now
		meta.SetStatusCondition(&st.Conditions, c)
	}

	// PodScheduled is always written and Finished, once a Pod of the sandbox terminated, never
	// removed (agent-sandbox v1.0.13): clients read their status, not their presence.
	if obs.expired {
		set(readyCondition(sb, obs))
		set(podScheduledCondition(sb, obs))
		if c := finishedCondition(sb, obs); c != nil {
			set(*c)
		}
		return st
	}
	if obs.pod != nil && obs.ownedPods == 1 {
		st.PodIPs = podIPs(obs.pod)
		st.NodeName = obs.pod.Spec.NodeName
		if sb.Spec.Agent != nil {
			st.Agent = agentStatus(obs.pod)
		}
		st.LabelSelector = podSelector(sb)
	}
	if obs.service != nil {
		st.Service = obs.service.Name
		st.ServiceFQDN = fmt.Sprintf("%s.%s.svc.%s", obs.service.Name, obs.service.Namespace, clusterDomain)
	}
	set(readyCondition(sb, obs))
	set(suspendedCondition(sb, obs))
	set(podScheduledCondition(sb, obs))
	if c := restoredCondition(sb, obs); c != nil {
		set(*c)
	}
	if c := finishedCondition(sb, obs); c != nil {
		set(*c)
	}
	return st
}

// podSelector is status.selector: the label selector of the sandbox's Pod.
func podSelector(sb *sandboxv1beta1.Sandbox) string {
	return labels.Set{sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(sb.Name)}.String()
}

func readyCondition(sb *sandboxv1beta1.Sandbox, obs *observed) metav1.Condition {
	notReady := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	switch {
	case obs.expired:
		return notReady(sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired")
	case obs.ownedPods > 1:
		return notReady(sandboxv1beta1.SandboxReasonMultiplePods, multiplePodsMessage(obs.ownedPods))
	case onlyPredecessorWaits(obs.err):
		return notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, obs.err.Error())
	case obs.err != nil && apierrors.IsInvalid(obs.err):
		// The API server refused a child as invalid: retrying cannot help until the spec changes.
		return notReady(sandboxv1beta1.SandboxReasonInvalidConfiguration,
			"The Sandbox's configuration is invalid; fix the spec: "+obs.err.Error())
	case obs.err != nil:
		return notReady(sandboxv1beta1.SandboxReasonReconcilerError, "Error seen: "+obs.err.Error())
	case suspended(sb) && (obs.pod != nil || obs.foreignPod):
		return notReady(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspending")
	case suspended(sb):
		return notReady(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspended")
	case obs.snapshotWait != "":
		return notReady(sandboxv1beta1.SandboxReasonSnapshotNotReady, obs.snapshotWait)
	case obs.restoreFailed != "":
		return notReady(sandboxv1beta1.SandboxReasonRestoreFailed, obs.restoreFailed)
	case obs.pod != nil && obs.pod.Status.Phase == corev1.PodSucceeded:
		return notReady(sandboxv1beta1.SandboxReasonPodSucceeded, podSucceededMessage)
	case obs.pod != nil && obs.pod.Status.Phase == corev1.PodFailed:
		return notReady(sandboxv1beta1.SandboxReasonPodFailed, podFailedMessage)
	}
	podMsg, podReady := podReadiness(obs.pod)
	svcMsg, svcReady := serviceReadiness(sb, obs.service)
	if podReady && svcReady {
		return metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue,
			Reason: sandboxv1beta1.SandboxReasonDependenciesReady, Message: podMsg + svcMsg}
	}
	return notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, podMsg+svcMsg)
}

// podReadiness describes the Pod the way agent-sandbox does and says whether it is ready.
func podReadiness(pod *corev1.Pod) (string, bool) {
	switch {
	case pod == nil:
		return "Pod does not exist", false
	case pod.DeletionTimestamp != nil:
		// A terminating Pod may still report Ready; agent-sandbox v1 is not Ready then.
		return "Pod is terminating", false
	case pod.Status.Phase != corev1.PodRunning:
		return fmt.Sprintf("Pod exists with phase: %s", pod.Status.Phase), false
	case !podConditionTrue(pod, corev1.PodReady):
		return "Pod is Running but not Ready", false
	case len(podIPs(pod)) == 0:
		return "Pod is Ready but has no podIPs yet", false
	}
	return "Pod is Ready", true
}

// serviceReadiness returns the message suffix for the Service and whether readiness is met: a
// Service is required when spec.service is true, or unset while an owned one exists.
func serviceReadiness(sb *sandboxv1beta1.Sandbox, svc *corev1.Service) (string, bool) {
	switch {
	case svc != nil:
		return "; Service Exists", true
	case sb.Spec.Service != nil && *sb.Spec.Service:
		return "; Service does not exist", false
	}
	return "", true
}

func suspendedCondition(sb *sandboxv1beta1.Sandbox, obs *observed) metav1.Condition {
	c := metav1.Condition{Type: sandboxv1beta1.SandboxConditionSuspended}
	switch {
	case !suspended(sb):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotSuspended, "Sandbox is not suspended"
	case obs.err != nil && obs.pod == nil && !obs.foreignPod:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, sandboxv1beta1.SandboxReasonPodStateUnknown,
			"Pod state is unknown. Sandbox suspension cannot be confirmed"
	case obs.foreignPod:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodNotOwned,
			"Refused to delete pod because it is not owned by this sandbox"
	case obs.pod != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodTerminating,
			"Pod is terminating. Sandbox is suspending"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated,
			"Pod has been terminated. Sandbox is suspended"
	}
	return c
}

// podScheduledCondition is the PodScheduled condition: the Pod's own while the sandbox has one Pod,
// and otherwise why there is none to mirror. It is always present (agent-sandbox v1.0.13).
func podScheduledCondition(sb *sandboxv1beta1.Sandbox, obs *observed) metav1.Condition {
	c := metav1.Condition{Type: sandboxv1beta1.SandboxConditionPodScheduled, Status: metav1.ConditionUnknown,
		Reason: sandboxv1beta1.SandboxReasonPodSchedulingUnknown}
	switch {
	case obs.expired:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired; it has no Pod"
		return c
	case obs.pod == nil && obs.err != nil && obs.ownedPods <= 1:
		// The pass failed before it saw the Pod, so its scheduling is not known.
		c.Message = "Pod state is unknown. Pod scheduling cannot be determined"
		return c
	case obs.ownedPods > 1:
		// Inferred: v1.0.13's notes do not say; there are Pods, but none that is the sandbox's.
		c.Message = multiplePodsMessage(obs.ownedPods)
		return c
	case obs.pod == nil && suspended(sb):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodAbsent, "Sandbox is suspended; it has no Pod"
		return c
	case obs.pod == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodAbsent, "Sandbox has no Pod"
		return c
	}
	c.Message = "Pod has not reported a PodScheduled condition yet"
	for _, pc := range obs.pod.Status.Conditions {
		if pc.Type != corev1.PodScheduled {
			continue
		}
		c.Status, c.Reason, c.Message = metav1.ConditionStatus(pc.Status), pc.Reason, pc.Message
		switch {
		case c.Reason != "":
		case c.Status == metav1.ConditionTrue:
			c.Reason = sandboxv1beta1.SandboxReasonPodScheduled
		default:
			c.Reason = sandboxv1beta1.SandboxReasonPodSchedulingUnknown
		}
	}
	return c
}

// finishedCondition is the Finished condition, nil while no Pod of the sandbox has terminated.
// Once present it is never removed (agent-sandbox v1.0.13): True with the outcome of the Pod that
// terminated, kept while the sandbox has no single Pod to look at (suspended, expired, between
// Pods, several Pods, a failed read); False/NotFinished while a later Pod has not terminated. The
// condition is the only record of an earlier Pod's outcome, so this reads the last pass's.
//
// A terminating Pod's phase is not an outcome: the kubelet moves every Pod it deletes to Succeeded
// or Failed as it stops the containers, and a suspend (or anyone deleting the Pod) would otherwise
// read as the workload finishing, starting a claim's ttlSecondsAfterFinished and a PodFailed event.
func finishedCondition(sb *sandboxv1beta1.Sandbox, obs *observed) *metav1.Condition {
	last := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionFinished)
	var lastCopy *metav1.Condition
	if last != nil {
		lastCopy = last.DeepCopy()
	}
	pod := obs.pod
	if obs.expired || pod == nil || obs.ownedPods != 1 || pod.DeletionTimestamp != nil {
		return lastCopy
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return &metav1.Condition{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue,
			Reason: sandboxv1beta1.SandboxReasonPodSucceeded, Message: podSucceededMessage}
	case corev1.PodFailed:
		return &metav1.Condition{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue,
			Reason: sandboxv1beta1.SandboxReasonPodFailed, Message: podFailedMessage}
	}
	if last == nil {
		return nil
	}
	return &metav1.Condition{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionFalse,
		Reason: sandboxv1beta1.SandboxReasonNotFinished, Message: notFinishedMessage}
}

// Messages of the Ready and Finished conditions for a terminal Pod, as agent-sandbox writes them.
// notFinishedMessage, kubox's wording (v1.0.13's notes name the reason only), is Finished's while
// a later Pod has not terminated.
const (
	podSucceededMessage = "Pod completed successfully"
	podFailedMessage    = "Pod failed"
	notFinishedMessage  = "The sandbox's current Pod has not finished; an earlier Pod did"
)

// multiplePodsMessage is the Ready message, and the event note, when n Pods are controlled by the
// Sandbox, as agent-sandbox writes it.
func multiplePodsMessage(n int) string {
	return fmt.Sprintf("multiple Pods (%d) are controlled by this Sandbox; refusing to choose or create a Pod", n)
}

func podIPs(pod *corev1.Pod) []string {
	ips := make([]string, 0, len(pod.Status.PodIPs))
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = append(ips, pod.Status.PodIP)
	}
	if len(ips) == 0 {
		return nil
	}
	return ips
}

func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func suspended(sb *sandboxv1beta1.Sandbox) bool {
	return sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended
}
