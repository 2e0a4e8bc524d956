package sandbox

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestProgressDeferral checks which status changes on the way to Ready wait for a later write: a
// Sandbox's status is written for the Pod as it was, then a pass some time later sees it changed.
func TestProgressDeferral(t *testing.T) {
	pending := func() *corev1.Pod { return testPod().Phase(corev1.PodPending).Obj() }
	bound := func() *corev1.Pod { return testPod().Phase(corev1.PodPending).Scheduled().NodeName("node-a").Obj() }
	unschedulable := func() *corev1.Pod {
		return testPod().Phase(corev1.PodPending).Condition(corev1.PodCondition{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}).Obj()
	}
	running := func() *corev1.Pod {
		return testPod().Phase(corev1.PodRunning).Scheduled().NodeName("node-a").Obj()
	}
	runningWithIP := func() *corev1.Pod {
		return testPod().Phase(corev1.PodRunning).Scheduled().NodeName("node-a").IP("10.0.0.1").Obj()
	}
	ready := func() *corev1.Pod { return readyPod().NodeName("node-a").IP("10.0.0.1").Obj() }
	failed := func() *corev1.Pod { return testPod().Phase(corev1.PodFailed).Scheduled().NodeName("node-a").Obj() }

	tests := []struct {
		name     string
		from, to func() *corev1.Pod
		after    time.Duration // since the first status was written
		change   func(sb *sandboxv1beta1.Sandbox, obs *observed)
		want     time.Duration
	}{
		{name: "scheduled", from: pending, to: bound, after: time.Second, want: 4 * time.Second},
		{name: "running, no IP", from: pending, to: running, after: 2 * time.Second, want: 3 * time.Second},
		{name: "running after scheduled", from: bound, to: running, after: time.Second, want: 4 * time.Second},
		{name: "scheduled at the delay", from: pending, to: bound, after: progressDelay},
		{name: "scheduled after the delay", from: pending, to: bound, after: time.Minute},
		{name: "unschedulable", from: pending, to: unschedulable, after: time.Second},
		{name: "scheduled after unschedulable", from: unschedulable, to: bound, after: time.Second},
		{name: "an IP", from: pending, to: runningWithIP, after: time.Second},
		{name: "ready", from: pending, to: ready, after: time.Second},
		{name: "failed", from: pending, to: failed, after: time.Second},
		{name: "an error", from: pending, to: bound, after: time.Second,
			change: func(_ *sandboxv1beta1.Sandbox, obs *observed) { obs.err = errBoom }},
		{name: "a spec change", from: pending, to: bound, after: time.Second,
			change: func(sb *sandboxv1beta1.Sandbox, _ *observed) { sb.Generation++ }},
		{name: "a Service", from: pending, to: bound, after: time.Second,
			change: func(_ *sandboxv1beta1.Sandbox, obs *observed) { obs.service = testService() }},
		{name: "suspended", from: pending, to: bound, after: time.Second,
			change: func(sb *sandboxv1beta1.Sandbox, _ *observed) {
				sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
			}},
		{name: "idle status", from: pending, to: bound, after: time.Second,
			change: func(_ *sandboxv1beta1.Sandbox, obs *observed) { obs.idle = &sandboxv1beta1.IdleStatus{} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := withMeta(testSandbox().Obj())
			sb.Status = computeStatus(sb, &observed{ownedPods: 1, pod: tc.from()}, testDomain, testNow)
			written := *sb.Status.DeepCopy()
			obs := &observed{ownedPods: 1, pod: tc.to()}
			if tc.change != nil {
				tc.change(sb, obs)
			}
			now := metav1.NewTime(testNow.Add(tc.after))
			want := computeStatus(sb, obs, testDomain, now)
			if got := progressDeferral(&written, &want, now.Time); got != tc.want {
				t.Errorf("progressDeferral = %v; want %v (written %+v, wanted %+v)", got, tc.want, written, want)
			}
		})
	}
}

// TestProgressDeferralNeedsAWrittenStatus checks that the first observation of a Sandbox is always
// written: nothing a client could read says anything about its Pod yet.
func TestProgressDeferralNeedsAWrittenStatus(t *testing.T) {
	sb := withMeta(testSandbox().Obj())
	want := computeStatus(sb, &observed{ownedPods: 1, pod: testPod().Phase(corev1.PodPending).Obj()}, testDomain, testNow)
	if got := progressDeferral(&sandboxv1beta1.SandboxStatus{}, &want, testNow.Time); got != 0 {
		t.Errorf("progressDeferral of the first status = %v; want 0", got)
	}
}
