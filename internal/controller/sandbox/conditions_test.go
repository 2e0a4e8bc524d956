package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestComputeStatusPersistentConditions pins agent-sandbox v1.0.13's PodScheduled and Finished
// (#2142, from its release notes): PodScheduled is always present, False/PodAbsent without a Pod;
// Finished is absent until a Pod of the sandbox first terminates, then never removed: it keeps the
// last Pod's outcome while there is no Pod, and is False/NotFinished while a later Pod runs. Each
// case is one pass: the conditions the last pass wrote, and what this pass saw.
func TestComputeStatusPersistentConditions(t *testing.T) {
	was := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "old", ObservedGeneration: 1,
			LastTransitionTime: testEarlier}
	}
	finishedWas := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{was(sandboxv1beta1.SandboxConditionFinished, status, reason),
			was(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled)}
	}
	// kept is a condition the pass leaves as it was but for its generation.
	kept := func(typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
		c := was(typ, status, reason)
		c.ObservedGeneration = testGeneration
		return &c
	}
	finished := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return ptrTo(cond(sandboxv1beta1.SandboxConditionFinished, status, reason, ""))
	}
	pending := func() *corev1.Pod { return testPod().Phase(corev1.PodPending).Obj() }
	running := func() *corev1.Pod { return readyPod().IP("10.244.0.5").Obj() }
	terminated := func(phase corev1.PodPhase) func() *corev1.Pod {
		return func() *corev1.Pod { return testPod().Phase(phase).Scheduled().Obj() }
	}
	// killed is the Pod a suspend deleted, which the kubelet moved to a terminal phase as it
	// stopped its containers (Kubernetes does so for every Pod it deletes).
	killed := func(phase corev1.PodPhase) func() *corev1.Pod {
		return func() *corev1.Pod {
			p := testPod().Phase(phase).Scheduled().Obj()
			p.DeletionTimestamp = &testEarlier
			return p
		}
	}
	noPod := func() *corev1.Pod { return nil }
	podAbsent, suspendedAbsent := ptrTo(podAbsentCond), ptrTo(cond(sandboxv1beta1.SandboxConditionPodScheduled,
		metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodAbsent, ""))
	unknown := ptrTo(schedulingUnknownCond)

	cases := map[string]struct {
		previous      []metav1.Condition
		suspended     bool
		pod           func() *corev1.Pod
		obs           observed // besides the pod
		wantScheduled *metav1.Condition
		wantFinished  *metav1.Condition
	}{
		"created, no Pod yet": {pod: noPod, wantScheduled: podAbsent},
		"created suspended":   {suspended: true, pod: noPod, wantScheduled: suspendedAbsent},
		"waiting for the snapshot the Pod starts from": {pod: noPod, obs: observed{snapshotWait: "SandboxSnapshot s is not Ready"},
			wantScheduled: podAbsent},
		"the first Pod is Pending": {pod: pending, wantScheduled: unknown},
		"the first Pod runs":       {pod: running, wantScheduled: ptrTo(scheduledCond)},
		"the first Pod succeeds": {pod: terminated(corev1.PodSucceeded), wantScheduled: ptrTo(scheduledCond),
			wantFinished: finished(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded)},
		"the first Pod fails": {pod: terminated(corev1.PodFailed), wantScheduled: ptrTo(scheduledCond),
			wantFinished: finished(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodFailed)},
		"suspended after the Pod succeeded: Finished stays, its time kept": {
			previous: finishedWas(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded), suspended: true, pod: noPod,
			wantScheduled: suspendedAbsent,
			wantFinished:  kept(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded)},
		"between Pods after a failure: Finished stays": {
			previous: finishedWas(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodFailed), pod: noPod,
			wantScheduled: podAbsent,
			wantFinished:  kept(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodFailed)},
		"resumed: the later Pod has not finished": {
			previous: finishedWas(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded), pod: pending,
			wantScheduled: unknown, wantFinished: finished(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished)},
		"restarted: the later Pod runs": {
			previous: finishedWas(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodFailed), pod: running,
			wantScheduled: kept(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled),
			wantFinished:  finished(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished)},
		"the later Pod fails: True again": {
			previous: finishedWas(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished), pod: terminated(corev1.PodFailed),
			wantScheduled: kept(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled),
			wantFinished:  finished(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodFailed)},
		"suspended while the later Pod ran: NotFinished stays": {
			previous: finishedWas(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished), suspended: true, pod: noPod,
			wantScheduled: suspendedAbsent,
			wantFinished:  kept(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished)},
		// The kubelet ends a deleted Pod Failed or Succeeded: that is the suspend, not the
		// workload finishing, and must not start a claim's ttlSecondsAfterFinished.
		"suspending: the deleted Pod ends Failed": {suspended: true, pod: killed(corev1.PodFailed),
			wantScheduled: ptrTo(scheduledCond)},
		"suspending: the deleted later Pod ends Succeeded": {
			previous: finishedWas(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished), suspended: true,
			pod:           killed(corev1.PodSucceeded),
			wantScheduled: kept(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodScheduled),
			wantFinished:  kept(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished)},
		"several Pods: Finished stays": {
			previous: finishedWas(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded), pod: noPod, obs: observed{ownedPods: 2},
			wantScheduled: ptrTo(cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionUnknown,
				sandboxv1beta1.SandboxReasonPodSchedulingUnknown, "")),
			wantFinished: kept(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded)},
		"an error before the Pod was seen: Finished stays": {
			previous: finishedWas(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded), pod: noPod, obs: observed{err: errBoom},
			wantScheduled: ptrTo(podStateUnknownSchedulingCond),
			wantFinished:  kept(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodSucceeded)},
		"expired after the later Pod ran: NotFinished stays": {
			previous: finishedWas(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished), pod: noPod, obs: observed{expired: true},
			wantScheduled: ptrTo(cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired, "")),
			wantFinished:  kept(sandboxv1beta1.SandboxConditionFinished, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotFinished)},
		"expired before any Pod finished": {pod: noPod, obs: observed{expired: true},
			wantScheduled: ptrTo(cond(sandboxv1beta1.SandboxConditionPodScheduled, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired, ""))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := testSandbox()
			if tc.suspended {
				w = w.Suspended()
			}
			for _, c := range tc.previous {
				w = w.Condition(c)
			}
			obs := tc.obs
			if p := tc.pod(); p != nil {
				obs.pod, obs.ownedPods = p, 1
			}
			st := computeStatus(withMeta(w.Obj()), &obs, testDomain, testNow)
			got := findCondition(sandboxv1beta1.SandboxConditionPodScheduled)(st)
			if diff := cmp.Diff(tc.wantScheduled, got, ignoreMessage); diff != "" {
				t.Errorf("PodScheduled (-want +got):\n%s", diff)
			}
			got = findCondition(sandboxv1beta1.SandboxConditionFinished)(st)
			if diff := cmp.Diff(tc.wantFinished, got, ignoreMessage); diff != "" {
				t.Errorf("Finished (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFinishedMessages pins the Finished messages: agent-sandbox's for True, kubox's own for
// False/NotFinished (v1.0.13's notes name the reason only).
func TestFinishedMessages(t *testing.T) {
	previous := metav1.Condition{Type: sandboxv1beta1.SandboxConditionFinished, Status: metav1.ConditionTrue,
		Reason: sandboxv1beta1.SandboxReasonPodSucceeded, Message: "Pod completed successfully", LastTransitionTime: testEarlier}
	cases := map[string]struct {
		phase corev1.PodPhase
		want  string
	}{
		"succeeded": {phase: corev1.PodSucceeded, want: "Pod completed successfully"},
		"failed":    {phase: corev1.PodFailed, want: "Pod failed"},
		"running":   {phase: corev1.PodRunning, want: "The sandbox's current Pod has not finished; an earlier Pod did"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := withMeta(testSandbox().Condition(previous).Obj())
			st := computeStatus(sb, &observed{ownedPods: 1, pod: testPod().Phase(tc.phase).Obj()}, testDomain, testNow)
			c := findCondition(sandboxv1beta1.SandboxConditionFinished)(st)
			if c == nil || c.Message != tc.want {
				t.Errorf("Finished = %+v, want message %q", c, tc.want)
			}
		})
	}
}
