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
			if got := progressDeferral(sb, &want, now.Time); got != tc.want {
				t.Errorf("progressDeferral = %v; want %v (written %+v, wanted %+v)", got, tc.want, written, want)
			}
		})
	}
}

// TestFirstStatusDeferral checks which first statuses wait: an unclaimed pool member's, while its
// Pod merely starts, until progressDelay after its creation; every other Sandbox's at once.
func TestFirstStatusDeferral(t *testing.T) {
	pending := func() *corev1.Pod { return testPod().Phase(corev1.PodPending).Obj() }
	running := func() *corev1.Pod { return testPod().Phase(corev1.PodRunning).Scheduled().NodeName("node-a").Obj() }
	tests := []struct {
		name   string
		member bool
		pod    func() *corev1.Pod
		after  time.Duration // since the Sandbox's creation
		err    error
		want   time.Duration
	}{
		{name: "member, Pod pending", member: true, pod: pending, after: time.Second, want: 4 * time.Second},
		{name: "member, Pod running without an IP", member: true, pod: running, after: 2 * time.Second, want: 3 * time.Second},
		{name: "member, at the delay", member: true, pod: pending, after: progressDelay},
		{name: "member, no Pod yet", member: true, after: time.Second, want: 4 * time.Second},
		{name: "member, Pod with an IP", member: true, after: time.Second,
			pod: func() *corev1.Pod { return testPod().Phase(corev1.PodRunning).Scheduled().IP("10.0.0.1").Obj() }},
		{name: "member, Pod ready", member: true, after: time.Second,
			pod: func() *corev1.Pod { return readyPod().IP("10.0.0.1").Obj() }},
		{name: "member, Pod unschedulable", member: true, after: time.Second,
			pod: func() *corev1.Pod {
				return testPod().Phase(corev1.PodPending).Condition(corev1.PodCondition{Type: corev1.PodScheduled,
					Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}).Obj()
			}},
		{name: "member, Pod failed", member: true, after: time.Second,
			pod: func() *corev1.Pod { return testPod().Phase(corev1.PodFailed).Scheduled().Obj() }},
		{name: "member, an error", member: true, pod: pending, after: time.Second, err: errBoom},
		{name: "a user's Sandbox", pod: pending, after: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := testSandbox()
			if tc.member {
				w = w.Label(sandboxv1beta1.WarmPoolSandboxLabel, "pool-hash")
			}
			sb := withMeta(w.Obj())
			sb.CreationTimestamp = testNow
			obs := &observed{err: tc.err}
			if tc.pod != nil {
				obs.pod, obs.ownedPods = tc.pod(), 1
			}
			now := metav1.NewTime(testNow.Add(tc.after))
			want := computeStatus(sb, obs, testDomain, now)
			if got := progressDeferral(sb, &want, now.Time); got != tc.want {
				t.Errorf("progressDeferral of the first status = %v; want %v (wanted %+v)", got, tc.want, want)
			}
		})
	}
}
