package sandboxwarmpool

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// batchStatus is the status of a pool of 3 replicas with members members, ready of them Ready.
func batchStatus(members, ready int32) extv1beta1.SandboxWarmPoolStatus {
	readyCond := metav1.Condition{Type: extv1beta1.WarmPoolConditionReady, Status: metav1.ConditionFalse,
		Reason: extv1beta1.WarmPoolReasonReplicasNotReady, ObservedGeneration: 1}
	prog := metav1.Condition{Type: extv1beta1.WarmPoolConditionProgressing, Status: metav1.ConditionTrue,
		Reason: extv1beta1.WarmPoolReasonReplicasUpdating, ObservedGeneration: 1}
	if ready == 3 {
		readyCond.Status, readyCond.Reason = metav1.ConditionTrue, extv1beta1.WarmPoolReasonReplicasReady
	}
	if members == 3 && ready == 3 {
		prog.Reason = extv1beta1.WarmPoolReasonReplicasUpToDate
	}
	return extv1beta1.SandboxWarmPoolStatus{Replicas: members, ReadyReplicas: ready, UpdatedReplicas: members,
		Selector: extv1beta1.WarmPoolSelector("pool"), ObservedGeneration: 1,
		Conditions: []metav1.Condition{readyCond, prog}}
}

// TestStatusBatchWaitsOnlyForCounting checks which pool status changes wait for the batch period
// and which are written at once.
func TestStatusBatchWaitsOnlyForCounting(t *testing.T) {
	full, taken, replaced := batchStatus(3, 3), batchStatus(2, 2), batchStatus(3, 2)
	tests := map[string]struct {
		written, want extv1beta1.SandboxWarmPoolStatus
		waits         bool
	}{
		"a member taken":               {written: full, want: taken, waits: true},
		"its replacement created":      {written: taken, want: replaced, waits: true},
		"Ready again":                  {written: taken, want: full},
		"a member of a filling pool":   {written: batchStatus(3, 0), want: batchStatus(3, 1), waits: true},
		"the first status":             {written: extv1beta1.SandboxWarmPoolStatus{}, want: taken},
		"nothing changed":              {written: taken, want: taken},
		"a new generation":             {written: full, want: withGeneration(taken, 2)},
		"an error":                     {written: full, want: withReadyReason(taken, extv1beta1.WarmPoolReasonReconcilerError)},
		"unschedulable members":        {written: taken, want: withReadyReason(taken, extv1beta1.WarmPoolReasonMembersUnschedulable)},
		"no longer unschedulable":      {written: withReadyReason(taken, extv1beta1.WarmPoolReasonMembersUnschedulable), want: taken},
		"the template gone":            {written: full, want: withReadyReason(taken, extv1beta1.WarmPoolReasonTemplateNotFound)},
		"a condition more than before": {written: withoutProgressing(full), want: taken},
	}
	start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := newStatusBatch(time.Second)
			got := b.wait("ns/pool", &tc.written, &tc.want, start)
			if !tc.waits {
				if got != 0 {
					t.Fatalf("wait = %v; want 0 (write now)", got)
				}
				return
			}
			if got != time.Second {
				t.Fatalf("wait of the first change = %v; want the period, 1s", got)
			}
			// A later change in the same batch waits only for what is left of the period.
			if got := b.wait("ns/pool", &tc.written, &tc.want, start.Add(300*time.Millisecond)); got != 700*time.Millisecond {
				t.Errorf("wait 300ms later = %v; want 700ms", got)
			}
			if got := b.wait("ns/pool", &tc.written, &tc.want, start.Add(time.Second)); got != 0 {
				t.Errorf("wait at the end of the period = %v; want 0", got)
			}
			// The batch ended with that write: the next change starts a new one.
			if got := b.wait("ns/pool", &tc.written, &tc.want, start.Add(2*time.Second)); got != time.Second {
				t.Errorf("wait of the next batch's first change = %v; want 1s", got)
			}
		})
	}
}

// TestStatusBatchEndsWhenNothingIsLeftToWrite checks that a pool back to its written status ends
// its batch (no write at all), and that another pool's batch is its own.
func TestStatusBatchEndsWhenNothingIsLeftToWrite(t *testing.T) {
	full, taken := batchStatus(3, 3), batchStatus(2, 2)
	start := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	b := newStatusBatch(time.Second)
	if got := b.wait("ns/a", &full, &taken, start); got != time.Second {
		t.Fatalf("pool a, a member taken: wait = %v; want 1s", got)
	}
	if got := b.wait("ns/b", &full, &taken, start.Add(500*time.Millisecond)); got != time.Second {
		t.Errorf("pool b, a member taken half a period later: wait = %v; want 1s, its own batch", got)
	}
	if got := b.wait("ns/a", &full, &full, start.Add(600*time.Millisecond)); got != 0 {
		t.Errorf("pool a back to its written status: wait = %v; want 0", got)
	}
	if got := b.wait("ns/a", &full, &taken, start.Add(5*time.Second)); got != time.Second {
		t.Errorf("pool a, the next take: wait = %v; want 1s (a new batch)", got)
	}
	if got := newStatusBatch(0).wait("ns/a", &full, &taken, start); got != 0 {
		t.Errorf("period 0: wait = %v; want 0", got)
	}
}

func withGeneration(st extv1beta1.SandboxWarmPoolStatus, gen int64) extv1beta1.SandboxWarmPoolStatus {
	st.ObservedGeneration = gen
	st.Conditions = append([]metav1.Condition(nil), st.Conditions...)
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = gen
	}
	return st
}

func withReadyReason(st extv1beta1.SandboxWarmPoolStatus, reason string) extv1beta1.SandboxWarmPoolStatus {
	st.Conditions = append([]metav1.Condition(nil), st.Conditions...)
	st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, reason
	return st
}

func withoutProgressing(st extv1beta1.SandboxWarmPoolStatus) extv1beta1.SandboxWarmPoolStatus {
	st.Conditions = st.Conditions[:1:1]
	return st
}
