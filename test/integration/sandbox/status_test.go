package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestStatusFollowsThePod drives one Pod from creation through scheduling to Ready and then to
// Succeeded, as a scheduler and kubelet would, and checks every status field and condition the
// Sandbox reports on the way, with agent-sandbox's types, reasons and messages.
func TestStatusFollowsThePod(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "life"
	env.Create(t, testutil.MakeSandbox(name, ns).Service(true).Container("main", testutil.DefaultImage, 8080).Obj())
	selector := sandboxv1beta1.SandboxNameHashLabel + "=" + sandboxv1beta1.NameHash(name)
	fqdn := fmt.Sprintf("%s.%s.svc.%s", name, ns, clusterDomain)

	// The API server creates the Pod Pending; no scheduler has looked at it yet.
	sb := waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, "Pod exists with phase: Pending; Service Exists"),
		notSuspended,
		scheduledCond(metav1.ConditionUnknown, sandboxv1beta1.SandboxReasonPodSchedulingUnknown, "Pod has not reported a PodScheduled condition yet"),
		absent(sandboxv1beta1.SandboxConditionFinished),
	)
	want := sandboxv1beta1.SandboxStatus{
		Service:            name,
		ServiceFQDN:        fqdn,
		LabelSelector:      selector,
		ObservedGeneration: sb.Generation,
		PreviewID:          contract.PreviewID(sb.UID), // what kubox-router serves its ports under
	}
	if diff := cmp.Diff(want, liveStatus(sb)); diff != "" {
		t.Errorf("Status of a Sandbox with a Pending Pod (-want +got):\n%s", diff)
	}
	if got := sb.Annotations[sandboxv1beta1.PodNameAnnotation]; got != name {
		t.Errorf("Sandbox annotation %s=%q; want the Pod's name, %q", sandboxv1beta1.PodNameAnnotation, got, name)
	}

	t.Log("The scheduler finds no node")
	env.UpdatePodStatus(t, ns, name, func(st *corev1.PodStatus) {
		framework.SetPodCondition(st, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory."})
	})
	waitForConditions(t, ns, name,
		scheduledCond(metav1.ConditionFalse, corev1.PodReasonUnschedulable, "0/3 nodes are available: 3 Insufficient memory."),
		notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, "Pod exists with phase: Pending; Service Exists"),
	)

	t.Log("The scheduler binds the Pod: PodScheduled=True without a reason")
	env.BindPod(t, ns, name, "node-a")
	waitForConditions(t, ns, name,
		scheduledCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled, ""),
		notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, "Pod exists with phase: Pending; Service Exists"),
	)
	waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		return sb.Status.NodeName == "node-a", describe(sb)
	})

	t.Log("The containers start, not yet ready")
	env.UpdatePodStatus(t, ns, name, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		framework.SetPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"})
	})
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, "Pod is Running but not Ready; Service Exists"))

	t.Log("Ready, but the Pod has no IP yet")
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady())
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, "Pod is Ready but has no podIPs yet; Service Exists"))

	t.Log("Ready with a dual-stack IP pair")
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.1.2.3", "fd00::1:2:3"))
	sb = waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"),
		notSuspended,
		scheduledCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled, ""),
		absent(sandboxv1beta1.SandboxConditionFinished),
	)
	want.PodIPs = []string{"10.1.2.3", "fd00::1:2:3"}
	want.NodeName = "node-a"
	if diff := cmp.Diff(want, liveStatus(sb)); diff != "" {
		t.Errorf("Status of a Ready Sandbox (-want +got):\n%s", diff)
	}

	t.Log("A spec change moves observedGeneration, on the status and on every condition")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) {
		sb.Spec.PodTemplate.Metadata.Labels = map[string]string{"touched": "yes"}
	})
	sb = waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"),
		notSuspended,
		scheduledCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled, ""),
	)
	if sb.Generation < 2 {
		t.Errorf("Sandbox generation %d after a spec change; want at least 2", sb.Generation)
	}

	t.Log("The Pod completes")
	env.UpdatePodStatus(t, ns, name, framework.Succeeded)
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonPodSucceeded, "Pod completed successfully"),
		finishedCond(sandboxv1beta1.SandboxReasonPodSucceeded, "Pod completed successfully"),
		notSuspended,
	)

	t.Log("Suspending removes the finished Pod (a terminal Pod goes at once); Finished stays (agent-sandbox v1.0.13)")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended })
	sb = waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspended"),
		suspendedCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated, "Pod has been terminated. Sandbox is suspended"),
		finishedCond(sandboxv1beta1.SandboxReasonPodSucceeded, "Pod completed successfully"),
		suspendedNoPod,
	)
	if len(sb.Status.PodIPs) != 0 || sb.Status.NodeName != "" {
		t.Errorf("Suspended Sandbox reports podIPs %v and nodeName %q; want neither", sb.Status.PodIPs, sb.Status.NodeName)
	}
	if sb.Status.Service != name || sb.Status.ServiceFQDN != fqdn {
		t.Errorf("Suspended Sandbox reports service %q (%q); want the Service it keeps, %q (%q)",
			sb.Status.Service, sb.Status.ServiceFQDN, name, fqdn)
	}
}

// liveStatus is the Sandbox status without its conditions, which tests check on their own.
func liveStatus(sb *sandboxv1beta1.Sandbox) sandboxv1beta1.SandboxStatus {
	st := *sb.Status.DeepCopy()
	st.Conditions = nil
	return st
}

// TestPodFailed checks the conditions of a Sandbox whose Pod failed, and that no replacement Pod is
// made: the Sandbox reports the terminal Pod, as agent-sandbox does.
func TestPodFailed(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "fails"
	env.Create(t, testutil.MakeSandbox(name, ns).Obj())
	pod := waitForPod(t, ns, name)

	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.9"))
	waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
		absent(sandboxv1beta1.SandboxConditionFinished),
	)

	env.UpdatePodStatus(t, ns, name, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodFailed
		st.Reason, st.Message = "OOMKilled", "The container used more memory than its limit"
		framework.SetPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodFailed"})
	})
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonPodFailed, "Pod failed"),
		finishedCond(sandboxv1beta1.SandboxReasonPodFailed, "Pod failed"),
		notSuspended,
	)
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeWarning, sandbox.EventPodFailed, "Pod failed")
	got := waitForPod(t, ns, name)
	if got.UID != pod.UID {
		t.Errorf("Pod %s was replaced after it failed (uid %s, now %s); want the failed Pod kept", name, pod.UID, got.UID)
	}
}

// TestNoService checks readiness without spec.service: no Service is made or required.
func TestNoService(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "bare"
	env.Create(t, testutil.MakeSandbox(name, ns).Container("main", testutil.DefaultImage, 8080).Obj())
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, "Pod exists with phase: Pending"))
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.4"))
	sb := waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"))
	if sb.Status.Service != "" || sb.Status.ServiceFQDN != "" {
		t.Errorf("Sandbox without spec.service reports service %q (%q); want none", sb.Status.Service, sb.Status.ServiceFQDN)
	}
	if found, err := env.Get(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); found || err != nil {
		t.Errorf("Service %s exists (%t, err %v) for a Sandbox without spec.service; want none", name, found, err)
	}
}

// TestInvalidPodIsInvalidConfiguration checks that a Pod the API server refuses as invalid makes
// the Sandbox Ready=False with reason InvalidConfiguration (agent-sandbox v1) and a message
// naming the field, instead of the transient ReconcilerError.
func TestInvalidPodIsInvalidConfiguration(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "invalid"
	// The CRD keeps the PodSpec schema-only; the Pod's own validation refuses the container name.
	env.Create(t, testutil.MakeSandbox(name, ns).Container("Not_A_DNS_Label", testutil.DefaultImage).Obj())
	waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		ok := c != nil && c.Status == metav1.ConditionFalse && c.Reason == sandboxv1beta1.SandboxReasonInvalidConfiguration &&
			strings.Contains(c.Message, `name: Invalid value: "Not_A_DNS_Label"`)
		return ok, describe(sb)
	})
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeWarning, sandbox.EventPodCreateFailed, "Not_A_DNS_Label")
}
