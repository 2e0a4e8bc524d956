package sandbox

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// agent-sandbox v1.0.13 (#2142, from its release notes): PodScheduled stays present, False/PodAbsent
// while the Sandbox has no Pod and False/SandboxExpired after expiry; Finished is absent until a
// Pod first terminates, then never removed, False/NotFinished while a later Pod has not.

func podAbsent(msg string) wantCondition {
	return scheduledCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodAbsent, msg)
}

var (
	noPod           = podAbsent("Sandbox has no Pod")
	suspendedNoPod  = podAbsent("Sandbox is suspended; it has no Pod")
	expiredNoPod    = scheduledCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired; it has no Pod")
	notScheduledYet = scheduledCond(metav1.ConditionUnknown, sandboxv1beta1.SandboxReasonPodSchedulingUnknown,
		"Pod has not reported a PodScheduled condition yet")
	scheduled   = scheduledCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled, "")
	succeeded   = finishedCond(sandboxv1beta1.SandboxReasonPodSucceeded, "Pod completed successfully")
	failed      = finishedCond(sandboxv1beta1.SandboxReasonPodFailed, "Pod failed")
	notFinished = wantCondition{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionFalse,
		Reason: sandboxv1beta1.SandboxReasonNotFinished, Message: "The sandbox's current Pod has not finished; an earlier Pod did"}
)

// runPod plays the scheduler and the kubelet for the Sandbox's current Pod: bound to a node (so
// a deletion waits for ForceDelete), Running and Ready.
func runPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod := waitForPod(t, ns, name)
	env.BindPod(t, ns, name, "node-a")
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.7"))
	return pod
}

// failPod makes the Pod's containers exit with an error, as the kubelet reports it.
func failPod(st *corev1.PodStatus) {
	st.Phase = corev1.PodFailed
	framework.SetPodCondition(st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodFailed"})
}

// suspendAndWait suspends the Sandbox and, while its bound Pod terminates, lets the kubelet end it
// (with end, when not nil, first: what the kubelet reports as it stops the containers) and remove
// it. A Pod that had terminated already is removed at once by the API server.
func suspendAndWait(t *testing.T, ns, name string, end func(*corev1.PodStatus), while ...wantCondition) {
	t.Helper()
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	found := false
	framework.Eventually(t, func() (bool, string) {
		var err error
		if found, err = env.Get(t, pod); err != nil {
			return false, err.Error()
		}
		return !found || pod.DeletionTimestamp != nil, "Pod is not being deleted"
	})
	if !found {
		return
	}
	if end != nil {
		env.UpdatePodStatus(t, ns, name, end)
		framework.Consistently(t, quiet, func() (bool, string) {
			ok, desc := conditionsMatch(framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name), while)
			return ok, "while the suspended Pod terminates: " + desc
		})
	}
	env.ForceDelete(t, pod)
}

// finishedSince returns the lastTransitionTime of the Sandbox's Finished condition.
func finishedSince(t *testing.T, sb *sandboxv1beta1.Sandbox) metav1.Time {
	t.Helper()
	c := findCondition(sb, sandboxv1beta1.SandboxConditionFinished)
	if c == nil {
		t.Fatalf("Sandbox %s has no Finished condition: %s", sb.Name, describe(sb))
	}
	return c.LastTransitionTime
}

// countEvents counts the Sandbox's events of reason, the repeats of an event series included (the
// recorder folds an event repeated soon after into one object with a series count).
func countEvents(t *testing.T, ns, name, reason string) int {
	t.Helper()
	evs, err := env.Events(t, ns, "Sandbox", name)
	if err != nil {
		t.Fatalf("Listing the events of Sandbox %s: %v", name, err)
	}
	n := 0
	for _, e := range evs {
		switch {
		case e.Reason != reason:
		case e.Series != nil:
			n += int(e.Series.Count)
		default:
			n++
		}
	}
	return n
}

// TestConditionsV1013AcrossTheLifecycle walks one Sandbox through create, Pod success, suspend,
// resume, a restart after a failure, a suspend whose Pod the kubelet ends Failed, and expiry,
// pinning PodScheduled and Finished at each step.
func TestConditionsV1013AcrossTheLifecycle(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "life"
	env.Create(t, testutil.MakeSandbox(name, ns).Obj())

	t.Log("Created: the Pod has not reported scheduling; no Pod has finished")
	waitForPod(t, ns, name)
	waitForConditions(t, ns, name, notScheduledYet, absent(sandboxv1beta1.SandboxConditionFinished))
	runPod(t, ns, name)
	waitForConditions(t, ns, name, readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
		scheduled, absent(sandboxv1beta1.SandboxConditionFinished))

	t.Log("The Pod succeeds: Finished=True/PodSucceeded")
	env.UpdatePodStatus(t, ns, name, framework.Succeeded)
	sb := waitForConditions(t, ns, name, notReady(sandboxv1beta1.SandboxReasonPodSucceeded, "Pod completed successfully"),
		scheduled, succeeded)
	finishedAt := finishedSince(t, sb)
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventPodSucceeded, "Pod completed successfully")

	t.Log("Suspended: no Pod, PodScheduled=False/PodAbsent, Finished stays True from the same time")
	suspendAndWait(t, ns, name, nil)
	sb = waitForConditions(t, ns, name,
		suspendedCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated, "Pod has been terminated. Sandbox is suspended"),
		suspendedNoPod, succeeded)
	if got := finishedSince(t, sb); !got.Equal(&finishedAt) {
		t.Errorf("Finished lastTransitionTime = %v after the suspend; want %v, when the Pod succeeded", got, finishedAt)
	}

	t.Log("Resumed: the later Pod has not finished")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeRunning })
	waitForPod(t, ns, name)
	waitForConditions(t, ns, name, notSuspended, notScheduledYet, notFinished)
	runPod(t, ns, name)
	waitForConditions(t, ns, name, readyCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
		scheduled, notFinished)

	t.Log("The later Pod fails: Finished=True/PodFailed")
	env.UpdatePodStatus(t, ns, name, failPod)
	failedPod := framework.Read[corev1.Pod](t, env, ns, name)
	waitForConditions(t, ns, name, notReady(sandboxv1beta1.SandboxReasonPodFailed, "Pod failed"), scheduled, failed)
	env.WaitForEvent(t, ns, "Sandbox", name, corev1.EventTypeWarning, sandbox.EventPodFailed, "Pod failed")

	t.Log("Restarted: the failed Pod is deleted; its replacement has not finished")
	env.ForceDelete(t, failedPod)
	framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		func(p *corev1.Pod) (bool, string) {
			return p.UID != failedPod.UID, "the failed Pod has not been replaced"
		})
	waitForConditions(t, ns, name, notScheduledYet, notFinished)
	runPod(t, ns, name)
	waitForConditions(t, ns, name, scheduled, notFinished)

	t.Log("Suspended while it runs: the kubelet ends the deleted Pod Failed, which is no finish")
	suspendAndWait(t, ns, name, failPod, notFinished)
	waitForConditions(t, ns, name,
		suspendedCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated, "Pod has been terminated. Sandbox is suspended"),
		suspendedNoPod, notFinished)

	t.Log("Expired: PodScheduled=False/SandboxExpired; Finished stays")
	setShutdownTime(t, ns, name, time.Now().Add(-time.Minute))
	waitForConditions(t, ns, name, notReady(sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired"), expiredNoPod, notFinished)
	if n := countEvents(t, ns, name, sandbox.EventPodFailed); n != 1 {
		t.Errorf("%d %s events; want 1, for the one Pod that failed on its own", n, sandbox.EventPodFailed)
	}
}

// TestConditionsV1013BeforeAPod: a Sandbox created suspended has had no Pod; PodScheduled says so
// from its first status, and Finished is absent.
func TestConditionsV1013BeforeAPod(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "unborn"
	env.Create(t, testutil.MakeSandbox(name, ns).Suspended().Obj())
	waitForConditions(t, ns, name, suspendedNoPod, absent(sandboxv1beta1.SandboxConditionFinished))

	t.Log("Resumed: the Pod appears; PodScheduled mirrors it")
	updateSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeRunning })
	waitForPod(t, ns, name)
	waitForConditions(t, ns, name, notScheduledYet, absent(sandboxv1beta1.SandboxConditionFinished))
}

// TestConditionsV1013WaitingForASnapshot: a Sandbox that starts from a SandboxSnapshot that does not
// exist gets no Pod until it does; PodScheduled says it has none.
func TestConditionsV1013WaitingForASnapshot(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "fork-of-nothing"
	sb := testutil.MakeSandbox(name, ns).Obj()
	sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "missing"}
	env.Create(t, sb)
	waitForConditions(t, ns, name,
		readyCond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonSnapshotNotReady,
			"SandboxSnapshot missing, which spec.snapshotRef names, does not exist"),
		noPod, absent(sandboxv1beta1.SandboxConditionFinished))
}

// TestConditionsV1013ExpiryAfterSuccess: a Sandbox whose Pod succeeded keeps Finished=True, with
// its time, once it expires (shutdownPolicy Retain), and reports no event for it twice.
func TestConditionsV1013ExpiryAfterSuccess(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	const name = "done"
	env.Create(t, testutil.MakeSandbox(name, ns).Obj())
	waitForPod(t, ns, name)
	env.UpdatePodStatus(t, ns, name, framework.Succeeded)
	finishedAt := finishedSince(t, waitForConditions(t, ns, name, succeeded))

	setShutdownTime(t, ns, name, time.Now().Add(-time.Minute))
	sb := waitForConditions(t, ns, name, notReady(sandboxv1beta1.SandboxReasonExpired, "Sandbox has expired"), expiredNoPod, succeeded)
	if got := finishedSince(t, sb); !got.Equal(&finishedAt) {
		t.Errorf("Finished lastTransitionTime = %v after expiry; want %v, when the Pod succeeded", got, finishedAt)
	}
	env.WaitGone(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	framework.Consistently(t, quiet, func() (bool, string) {
		n := countEvents(t, ns, name, sandbox.EventPodSucceeded)
		return n == 1, fmt.Sprintf("%d %s events; want 1", n, sandbox.EventPodSucceeded)
	})
}
