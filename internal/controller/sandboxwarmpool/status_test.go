package sandboxwarmpool

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

const testGeneration = int64(4)

// Reasons are written out literally: they are API (api/extensions/v1beta1/conditions.go).
const (
	reasonReplicasReady        = "ReplicasReady"
	reasonReplicasNotReady     = "ReplicasNotReady"
	reasonMembersUnschedulable = "MembersUnschedulable"
	reasonTemplateNotFound     = "TemplateNotFound"
	reasonReconcilerError      = "ReconcilerError"
	reasonReplicasUpdating     = "ReplicasUpdating"
	reasonReplicasUpToDate     = "ReplicasUpToDate"
	reasonDeadlineExceeded     = "ProgressDeadlineExceeded"
)

var testEarlier = metav1.NewTime(testNow.Add(-time.Hour))

// poolWrapper builds a SandboxWarmPool for the unit tests.
type poolWrapper struct{ extv1beta1.SandboxWarmPool }

func makePool(replicas int32) *poolWrapper {
	return &poolWrapper{extv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: testPool, Namespace: testNS, Generation: testGeneration, UID: "pool-uid"},
		Spec: extv1beta1.SandboxWarmPoolSpec{
			Replicas:                ptr.To(replicas),
			SandboxTemplateRef:      extv1beta1.SandboxTemplateReference{Name: "template"},
			ProgressDeadlineSeconds: ptr.To(int32(600)),
		},
	}}
}

func (w *poolWrapper) Strategy(s extv1beta1.WarmPoolUpdateStrategyType) *poolWrapper {
	w.Spec.UpdateStrategy.Type = s
	return w
}

// Condition sets a condition of the stored status.
func (w *poolWrapper) Condition(typ string, status metav1.ConditionStatus, reason string, ltt metav1.Time) *poolWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: ltt})
	return w
}

func (w *poolWrapper) Obj() *extv1beta1.SandboxWarmPool { return w.DeepCopy() }

func withTemplate(ms ...*memberWrapper) *observed {
	return &observed{template: &extv1beta1.SandboxTemplate{}, members: members(ms...)}
}

func cond(typ string, status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: testGeneration, LastTransitionTime: ltt}
}

func readyCond(status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
	return cond(extv1beta1.WarmPoolConditionReady, status, reason, msg, ltt)
}

func progressingCond(status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
	return cond(extv1beta1.WarmPoolConditionProgressing, status, reason, msg, ltt)
}

func TestComputeStatus(t *testing.T) {
	now := metav1.NewTime(testNow)
	selector := "agents.x-k8s.io/warm-pool-sandbox=" + "91dd7983" // FNV-1a of "pool"
	cases := map[string]struct {
		pool           *extv1beta1.SandboxWarmPool
		obs            *observed
		want           extv1beta1.SandboxWarmPoolStatus
		wantDeadlineIn time.Duration
		wantExceeded   bool
	}{
		"template not found": {
			pool: makePool(2).Obj(),
			obs:  &observed{members: members(makeMember("a", time.Hour).Ready())},
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 1, ReadyReplicas: 1, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionFalse, reasonTemplateNotFound, "SandboxTemplate template does not exist; the pool creates its members once it does", now),
				progressingCond(metav1.ConditionFalse, reasonTemplateNotFound, "SandboxTemplate template does not exist; the pool creates its members once it does", now),
			}},
		},
		"full and up to date": {
			pool: makePool(2).Obj(),
			obs:  withTemplate(makeMember("a", time.Hour).Ready(), makeMember("b", time.Hour).Ready()),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionTrue, reasonReplicasReady, "2 of 2 members are ready", now),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpToDate, "2 members are ready and built from the current template", now),
			}},
		},
		"replicas 0": {
			pool: makePool(0).Obj(),
			obs:  withTemplate(),
			want: extv1beta1.SandboxWarmPoolStatus{Conditions: []metav1.Condition{
				readyCond(metav1.ConditionTrue, reasonReplicasReady, "0 of 0 members are ready", now),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpToDate, "0 members are ready and built from the current template", now),
			}},
		},
		"filling": {
			pool: makePool(3).Obj(),
			obs:  withTemplate(makeMember("a", time.Hour).Ready(), makeMember("b", time.Second)),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionFalse, reasonReplicasNotReady, "1 of 3 members are ready", now),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpdating, "2 members, 1 ready, 2 built from the current template; 3 ready and up to date wanted", now),
			}},
			wantDeadlineIn: 10 * time.Minute,
		},
		"unschedulable members are reported": {
			pool: makePool(3).Obj(),
			obs: withTemplate(makeMember("a", time.Hour).Ready(),
				makeMember("b", time.Hour).Unschedulable("0/3 nodes are available: 3 Insufficient cpu."),
				makeMember("c", time.Hour).Unschedulable("0/3 nodes are available: 3 Insufficient cpu.")),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 3, ReadyReplicas: 1, UpdatedReplicas: 3, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionFalse, reasonMembersUnschedulable, "1 of 3 members are ready; 2 cannot be scheduled (b, c): "+
					"0/3 nodes are available: 3 Insufficient cpu.; the pool keeps them, rather than replacing them, until the cluster can place them", now),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpdating, "3 members, 1 ready, 3 built from the current template; 3 ready and up to date wanted", now),
			}},
			wantDeadlineIn: 10 * time.Minute,
		},
		"an unschedulable member does not matter once enough are ready": {
			pool: makePool(1).Obj(),
			obs:  withTemplate(makeMember("a", time.Hour).Ready(), makeMember("b", time.Hour).Unschedulable("no nodes")),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionTrue, reasonReplicasReady, "1 of 1 members are ready", now),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpdating, "2 members, 1 ready, 2 built from the current template; 1 ready and up to date wanted", now),
			}},
			wantDeadlineIn: 10 * time.Minute,
		},
		"errors": {
			pool: makePool(2).Obj(),
			obs: func() *observed {
				o := withTemplate(makeMember("a", time.Hour).Ready())
				o.errs = []error{errors.New("creating members: quota exceeded")}
				return o
			}(),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionFalse, reasonReconcilerError, "Error seen: creating members: quota exceeded", now),
				progressingCond(metav1.ConditionFalse, reasonReconcilerError, "Error seen: creating members: quota exceeded", now),
			}},
		},
		"stale members under OnReplenish": {
			pool: makePool(2).Strategy(onReplenish).Obj(),
			obs:  withTemplate(makeMember("a", time.Hour).Ready().Stale(), makeMember("b", time.Minute).Ready()),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionTrue, reasonReplicasReady, "2 of 2 members are ready", now),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpToDate,
					"2 members are ready; 1 of them are built from an older template and are replaced as they are claimed (updateStrategy OnReplenish)", now),
			}},
		},
		"stale members under Recreate": {
			pool: makePool(2).Strategy(recreate).Obj(),
			obs:  withTemplate(makeMember("a", time.Hour).Ready().Stale(), makeMember("b", time.Minute).Ready()),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionTrue, reasonReplicasReady, "2 of 2 members are ready", now),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpdating, "2 members, 2 ready, 1 built from the current template; 2 ready and up to date wanted", now),
			}},
			wantDeadlineIn: 10 * time.Minute,
		},
		"transition times are kept while the status stays": {
			pool: makePool(1).
				Condition(extv1beta1.WarmPoolConditionReady, metav1.ConditionTrue, reasonReplicasReady, testEarlier).
				Condition(extv1beta1.WarmPoolConditionProgressing, metav1.ConditionTrue, reasonReplicasUpToDate, testEarlier).Obj(),
			obs: withTemplate(makeMember("a", time.Hour).Ready()),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: []metav1.Condition{
				readyCond(metav1.ConditionTrue, reasonReplicasReady, "1 of 1 members are ready", testEarlier),
				progressingCond(metav1.ConditionTrue, reasonReplicasUpToDate, "1 members are ready and built from the current template", testEarlier),
			}},
		},
		"leaving the goal restarts the progress clock": {
			pool: makePool(2).
				Condition(extv1beta1.WarmPoolConditionProgressing, metav1.ConditionTrue, reasonReplicasUpToDate, testEarlier).Obj(),
			obs: withTemplate(makeMember("a", time.Hour).Ready()),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: []metav1.Condition{
				progressingCond(metav1.ConditionTrue, reasonReplicasUpdating, "1 members, 1 ready, 1 built from the current template; 2 ready and up to date wanted", now),
				readyCond(metav1.ConditionFalse, reasonReplicasNotReady, "1 of 2 members are ready", now),
			}},
			wantDeadlineIn: 10 * time.Minute,
		},
		"progress keeps the deadline away": {
			pool: makePool(2).
				Condition(extv1beta1.WarmPoolConditionProgressing, metav1.ConditionTrue, reasonReplicasUpdating, testEarlier).Obj(),
			obs: withTemplate(makeMember("a", time.Hour).Ready(), makeMember("b", 3*time.Minute).ReadyFor(time.Minute), makeMember("c", time.Hour).Stale().Ready()),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				progressingCond(metav1.ConditionTrue, reasonReplicasUpdating, "3 members, 3 ready, 2 built from the current template; 2 ready and up to date wanted", testEarlier),
				readyCond(metav1.ConditionTrue, reasonReplicasReady, "3 of 2 members are ready", now),
			}},
			wantDeadlineIn: 9 * time.Minute,
		},
		"no progress past the deadline": {
			pool: makePool(2).
				Condition(extv1beta1.WarmPoolConditionProgressing, metav1.ConditionTrue, reasonReplicasUpdating, testEarlier).Obj(),
			obs: withTemplate(makeMember("a", time.Hour).Ready(), makeMember("b", 11*time.Minute)),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				progressingCond(metav1.ConditionFalse, reasonDeadlineExceeded,
					"The pool made no progress for 10m0s: 2 members, 1 ready, 2 built from the current template; 2 ready and up to date wanted", now),
				readyCond(metav1.ConditionFalse, reasonReplicasNotReady, "1 of 2 members are ready", now),
			}},
			wantExceeded: true,
		},
		"still no progress after the deadline": {
			pool: makePool(2).
				Condition(extv1beta1.WarmPoolConditionProgressing, metav1.ConditionFalse, reasonDeadlineExceeded, testEarlier).Obj(),
			obs: withTemplate(makeMember("a", 2*time.Hour).Ready(), makeMember("b", 2*time.Hour)),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				progressingCond(metav1.ConditionFalse, reasonDeadlineExceeded,
					"The pool made no progress for 10m0s: 2 members, 1 ready, 2 built from the current template; 2 ready and up to date wanted", testEarlier),
				readyCond(metav1.ConditionFalse, reasonReplicasNotReady, "1 of 2 members are ready", now),
			}},
		},
		"progress after the deadline": {
			pool: makePool(3).
				Condition(extv1beta1.WarmPoolConditionProgressing, metav1.ConditionFalse, reasonDeadlineExceeded, testEarlier).Obj(),
			obs: withTemplate(makeMember("a", 2*time.Hour).Ready(), makeMember("b", 2*time.Hour).ReadyFor(time.Minute)),
			want: extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: []metav1.Condition{
				progressingCond(metav1.ConditionTrue, reasonReplicasUpdating, "2 members, 2 ready, 2 built from the current template; 3 ready and up to date wanted", now),
				readyCond(metav1.ConditionFalse, reasonReplicasNotReady, "2 of 3 members are ready", now),
			}},
			wantDeadlineIn: 10 * time.Minute,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.want.Selector = selector
			tc.want.ObservedGeneration = testGeneration
			got, prog := computeStatus(tc.pool, tc.obs, testNow)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("computeStatus() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]any{tc.wantDeadlineIn, tc.wantExceeded}, []any{prog.deadlineIn, prog.exceeded}); diff != "" {
				t.Errorf("computeStatus() progress (deadlineIn, exceeded) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConditionEvents(t *testing.T) {
	status := func(readyReason string) extv1beta1.SandboxWarmPoolStatus {
		return extv1beta1.SandboxWarmPoolStatus{Conditions: []metav1.Condition{{Type: extv1beta1.WarmPoolConditionReady, Reason: readyReason, Message: "msg"}}}
	}
	cases := map[string]struct {
		before, after extv1beta1.SandboxWarmPoolStatus
		prog          progress
		want          []poolEvent
	}{
		"members become unschedulable": {
			before: status(reasonReplicasNotReady), after: status(reasonMembersUnschedulable),
			want: []poolEvent{{"Warning", "WarmPoolNotProgressing", "Hold", "msg"}},
		},
		"members stay unschedulable": {
			before: status(reasonMembersUnschedulable), after: status(reasonMembersUnschedulable),
		},
		"members are scheduled again": {
			before: status(reasonMembersUnschedulable), after: status(reasonReplicasReady),
			want: []poolEvent{{"Normal", "WarmPoolProgressing", "Hold", "No member is unschedulable any more"}},
		},
		"deadline passes": {
			before: status(reasonReplicasNotReady), after: status(reasonReplicasNotReady),
			prog: progress{exceeded: true, condition: metav1.Condition{Message: "no progress"}},
			want: []poolEvent{{"Warning", "ProgressDeadlineExceeded", "Progress", "no progress"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := conditionEvents(tc.before, tc.after, tc.prog)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(poolEvent{})); diff != "" {
				t.Errorf("conditionEvents() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
