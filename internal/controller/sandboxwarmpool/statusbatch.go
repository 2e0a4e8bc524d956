package sandboxwarmpool

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// statusBatch holds back a pool's counting status changes for a period, so that the changes of a
// claim and its refill (a member taken, its replacement created, then Ready) are written in one
// status write, or in none when the pool is back where its written status says before the period
// ends. Only counting waits (onlyCounting); whatever a client acts on is written at once. It
// remembers, per pool, when the first change not yet written was seen. It is safe for concurrent
// use: passes over different pools run in parallel.
type statusBatch struct {
	period time.Duration

	mu    sync.Mutex
	since map[string]time.Time
}

func newStatusBatch(period time.Duration) *statusBatch {
	return &statusBatch{period: period, since: map[string]time.Time{}}
}

// wait returns how long the write of want over written, the status in the API server, may still
// wait at now: 0 when it must be made now, or when there is nothing to write. A caller that gets
// 0 writes (or finds nothing to write) and the pool's batch ends with it.
func (b *statusBatch) wait(key string, written, want *extv1beta1.SandboxWarmPoolStatus, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.period <= 0 || equality.Semantic.DeepEqual(written, want) || !onlyCounting(written, want) {
		delete(b.since, key)
		return 0
	}
	since, ok := b.since[key]
	if !ok {
		since = now
		b.since[key] = now
	}
	left := since.Add(b.period).Sub(now)
	if left <= 0 {
		delete(b.since, key)
		return 0
	}
	return left
}

// forget drops what the batch remembers of the pool with key (deleted).
func (b *statusBatch) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.since, key)
}

// onlyCounting reports whether want differs from written in nothing but counting: the replica
// counts, and the Ready and Progressing conditions moving between their ordinary reasons
// (ReplicasReady and ReplicasNotReady, ReplicasUpToDate and ReplicasUpdating) with their
// messages. It is false for a first status, a new observedGeneration or selector, any other
// reason or condition, and the pool turning Ready when written says it is not.
func onlyCounting(written, want *extv1beta1.SandboxWarmPoolStatus) bool {
	if written.ObservedGeneration != want.ObservedGeneration || written.Selector != want.Selector ||
		len(written.Conditions) != len(want.Conditions) {
		return false
	}
	for i := range want.Conditions {
		is := &want.Conditions[i]
		was := meta.FindStatusCondition(written.Conditions, is.Type)
		if was == nil || was.ObservedGeneration != is.ObservedGeneration || !countingReason(is) || !countingReason(was) {
			return false
		}
	}
	wasReady := meta.IsStatusConditionTrue(written.Conditions, extv1beta1.WarmPoolConditionReady)
	return wasReady || !meta.IsStatusConditionTrue(want.Conditions, extv1beta1.WarmPoolConditionReady)
}

// countingReason reports whether c is the Ready or Progressing condition with one of the reasons
// a pool goes through as members are taken and replaced.
func countingReason(c *metav1.Condition) bool {
	switch c.Type {
	case extv1beta1.WarmPoolConditionReady:
		return c.Reason == extv1beta1.WarmPoolReasonReplicasReady || c.Reason == extv1beta1.WarmPoolReasonReplicasNotReady
	case extv1beta1.WarmPoolConditionProgressing:
		return c.Status == metav1.ConditionTrue &&
			(c.Reason == extv1beta1.WarmPoolReasonReplicasUpToDate || c.Reason == extv1beta1.WarmPoolReasonReplicasUpdating)
	}
	return false
}
