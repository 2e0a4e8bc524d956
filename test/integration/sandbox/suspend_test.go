package sandbox

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestSuspendAndResume suspends a Ready Sandbox (its Pod, bound to a node, terminates gracefully)
// and resumes it: the Service and PVC stay throughout, and the Pod comes back with the same name
// and volumes.
func TestSuspendAndResume(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "nap"
	env.Create(t, testutil.MakeSandbox(name, ns).Service(true).VolumeClaimTemplate("work", "1Gi").Obj())
	pvcName := sandboxv1beta1.PVCName("work", name)

	pod := waitForPod(t, ns, name)
	env.BindPod(t, ns, name, "node-a")
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.5"))
	waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"),
		notSuspended)
	svc := framework.WaitForObject(t, env, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil)
	pvc := framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pvcName}}, nil)
	// agent-sandbox v1's lifecycle events.
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventPodCreated, "Created Pod "+name)
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventReady, "Pod is Ready")

	t.Log("Suspend: the Pod is deleted and, bound to a node, terminates gracefully")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended })
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspending"),
		suspendedCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodTerminating, "Pod is terminating. Sandbox is suspending"))
	terminating := framework.WaitForObject(t, env, pod.DeepCopy(), func(p *corev1.Pod) (bool, string) {
		return p.DeletionTimestamp != nil, "Pod is not being deleted"
	})
	if terminating.UID != pod.UID {
		t.Fatalf("Pod %s was replaced while suspending (uid %s, now %s)", name, pod.UID, terminating.UID)
	}

	t.Log("The kubelet finishes: the Pod is gone and the Sandbox is suspended")
	env.ForceDelete(t, terminating)
	sb := waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspended"),
		suspendedCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated, "Pod has been terminated. Sandbox is suspended"),
		suspendedNoPod,
		absent(sandboxv1beta1.SandboxConditionFinished))
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventSuspended, "Sandbox is suspended")
	if len(sb.Status.PodIPs) != 0 || sb.Status.NodeName != "" {
		t.Errorf("Suspended Sandbox reports podIPs %v and nodeName %q; want neither", sb.Status.PodIPs, sb.Status.NodeName)
	}
	if sb.Status.Service != name {
		t.Errorf("Suspended Sandbox reports service %q; want %q, which it keeps", sb.Status.Service, name)
	}
	// agent-sandbox v1 keeps the selector once set; its clients find the Pods by it.
	if want := sandboxv1beta1.SandboxNameHashLabel + "=" + sandboxv1beta1.NameHash(name); sb.Status.LabelSelector != want {
		t.Errorf("Suspended Sandbox reports selector %q; want %q, which it keeps", sb.Status.LabelSelector, want)
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		found, err := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		return !found && err == nil, "a Pod exists while the Sandbox is suspended"
	})
	keptSvc := framework.WaitForObject(t, env, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil)
	keptPVC := framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pvcName}}, nil)
	if keptSvc.UID != svc.UID || keptSvc.DeletionTimestamp != nil {
		t.Errorf("Service %s was replaced or is being deleted while suspended; want it kept", name)
	}
	if keptPVC.UID != pvc.UID || keptPVC.DeletionTimestamp != nil {
		t.Errorf("PersistentVolumeClaim %s was replaced or is being deleted while suspended; want it kept", pvcName)
	}

	t.Log("Resume: a new Pod with the same name and the same claim")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeRunning })
	resumed := waitForPod(t, ns, name)
	if resumed.UID == pod.UID {
		t.Errorf("Resumed Pod has the old Pod's uid %s; want a new Pod", pod.UID)
	}
	if ok, msg := env.IsControlledBy(resumed, sb); !ok {
		t.Error(msg)
	}
	if v := podVolume(resumed, "work"); v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvcName {
		t.Errorf("Resumed Pod has volume work = %+v; want PersistentVolumeClaim %s", v, pvcName)
	}
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonDependenciesNotReady, "Pod exists with phase: Pending; Service Exists"),
		notSuspended)
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.6"))
	sb = waitForConditions(t, ns, name,
		readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service Exists"),
		notSuspended)
	if len(sb.Status.PodIPs) != 1 || sb.Status.PodIPs[0] != "10.0.0.6" {
		t.Errorf("Resumed Sandbox reports podIPs %v; want [10.0.0.6]", sb.Status.PodIPs)
	}
}

// TestCreateSuspended creates a Sandbox suspended: no Pod is made, and the condition says it is
// suspended from the start.
func TestCreateSuspended(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "asleep"
	env.Create(t, testutil.MakeSandbox(name, ns).Suspended().Obj())
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspended"),
		suspendedCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated, "Pod has been terminated. Sandbox is suspended"),
		suspendedNoPod)
	framework.Consistently(t, quiet, func() (bool, string) {
		found, err := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		return !found && err == nil, "a Pod exists for a Sandbox created suspended"
	})
}

// TestSuspendLeavesAForeignPod suspends a Sandbox whose name is held by a Pod it does not own: the
// Pod is left alone and the Suspended condition says so.
func TestSuspendLeavesAForeignPod(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "squatted"
	foreign := testutil.MakePod(name, ns).Label("app", "someone-else").Obj()
	env.Create(t, foreign)
	env.Create(t, testutil.MakeSandbox(name, ns).Suspended().Obj())
	waitForConditions(t, ns, name,
		notReady(sandboxv1beta1.SandboxReasonSuspended, "Sandbox is suspending"),
		suspendedCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodNotOwned, "Refused to delete pod because it is not owned by this sandbox"))
	framework.Consistently(t, quiet, func() (bool, string) {
		p := foreign.DeepCopy()
		found, err := env.Get(t, p)
		return found && err == nil && p.DeletionTimestamp == nil && p.ResourceVersion == foreign.ResourceVersion,
			"the foreign Pod was changed or deleted"
	})
}
