package ui

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestSandboxView(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	active := created.Add(time.Minute)
	later := created.Add(2 * time.Minute)
	ready := metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue, Reason: "DependenciesReady"}
	notReady := metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionFalse, Reason: "PodNotReady", Message: "waiting"}
	owner := metav1.OwnerReference{Kind: "SandboxClaim", Name: "web", Controller: ptr.To(true)}
	for name, tc := range map[string]struct {
		mutate func(*sandboxv1beta1.Sandbox)
		want   sandboxRow
	}{
		"no status yet": {
			mutate: func(*sandboxv1beta1.Sandbox) {},
			want:   sandboxRow{State: "Pending"},
		},
		"ready, owned by a claim": {
			mutate: func(sb *sandboxv1beta1.Sandbox) {
				sb.Status.Conditions = []metav1.Condition{ready}
				sb.OwnerReferences = []metav1.OwnerReference{owner}
			},
			want: sandboxRow{State: "Ready", Owner: "SandboxClaim/web"},
		},
		"not ready: the reason and message": {
			mutate: func(sb *sandboxv1beta1.Sandbox) { sb.Status.Conditions = []metav1.Condition{notReady} },
			want:   sandboxRow{State: "PodNotReady", Message: "waiting"},
		},
		"suspended while still ready: suspending": {
			mutate: func(sb *sandboxv1beta1.Sandbox) {
				sb.Status.Conditions = []metav1.Condition{ready}
				sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
			},
			want: sandboxRow{State: "Suspending", Suspended: true},
		},
		"suspended": {
			mutate: func(sb *sandboxv1beta1.Sandbox) {
				sb.Status.Conditions = []metav1.Condition{notReady}
				sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
			},
			want: sandboxRow{State: "Suspended", Message: "waiting", Suspended: true},
		},
		"deleting wins": {
			mutate: func(sb *sandboxv1beta1.Sandbox) {
				sb.Status.Conditions = []metav1.Condition{ready}
				sb.DeletionTimestamp = &metav1.Time{Time: later}
			},
			want: sandboxRow{State: "Deleting"},
		},
		"idle status and a later annotation: the later": {
			mutate: func(sb *sandboxv1beta1.Sandbox) {
				sb.Status.Idle = &sandboxv1beta1.IdleStatus{LastActiveTime: &metav1.Time{Time: active}, Reason: "Requests"}
				sb.Annotations = map[string]string{sandboxv1beta1.LastActivityAnnotation: later.Format(time.RFC3339Nano)}
			},
			want: sandboxRow{State: "Pending", LastActive: &later, IdleReason: "Requests"},
		},
		"idle status only, and a shutdown time": {
			mutate: func(sb *sandboxv1beta1.Sandbox) {
				sb.Status.Idle = &sandboxv1beta1.IdleStatus{LastActiveTime: &metav1.Time{Time: active}, Reason: "Idle"}
				sb.Spec.ShutdownTime = &metav1.Time{Time: later}
			},
			want: sandboxRow{State: "Pending", LastActive: &active, IdleReason: "Idle", ShutdownTime: &later},
		},
	} {
		t.Run(name, func(t *testing.T) {
			sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", CreationTimestamp: metav1.Time{Time: created}}}
			tc.mutate(sb)
			tc.want.Name, tc.want.Created = "sb", created
			if diff := cmp.Diff(tc.want, sandboxView(sb)); diff != "" {
				t.Errorf("sandboxView (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLater(t *testing.T) {
	defer func(f func() time.Time) { now = f }(now)
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	now = func() time.Time { return at }
	past, future := metav1.NewTime(at.Add(-time.Hour)), metav1.NewTime(at.Add(time.Hour))
	for name, tc := range map[string]struct {
		cur  *metav1.Time
		want time.Time
	}{
		"no shutdown time: from now":   {nil, at.Add(time.Hour).Truncate(time.Second)},
		"a past one: from now":         {&past, at.Add(time.Hour).Truncate(time.Second)},
		"a future one: from that time": {&future, at.Add(2 * time.Hour).Truncate(time.Second)},
	} {
		if got := later(tc.cur, time.Hour); !got.Time.Equal(tc.want) {
			t.Errorf("%s: later = %s; want %s", name, got, tc.want)
		}
	}
}
