package usage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/usage"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func sandbox(ns, name, uid, principal string, ready, suspended bool) *sandboxv1beta1.Sandbox {
	st := func(b bool) metav1.ConditionStatus {
		if b {
			return metav1.ConditionTrue
		}
		return metav1.ConditionFalse
	}
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid),
		Labels:          map[string]string{"example.com/user": principal},
		OwnerReferences: []metav1.OwnerReference{{Kind: "SandboxClaim", Name: "claim-" + name}}}}
	sb.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	sb.Status.Conditions = []metav1.Condition{
		{Type: sandboxv1beta1.SandboxConditionReady, Status: st(ready)},
		{Type: sandboxv1beta1.SandboxConditionSuspended, Status: st(suspended)},
	}
	return sb
}

func TestTrackerRecordsOnDelete(t *testing.T) {
	tr := NewTracker(Config{PrincipalLabel: "example.com/user", MaxPrincipals: 10})
	tr.Observe(sandbox("team-a", "s", "u1", "alice", false, false), at(0))
	tr.Observe(sandbox("team-a", "s", "u1", "alice", true, false), at(10))
	tr.Observe(sandbox("team-a", "s", "u1", "alice", false, true), at(70))
	tr.Observe(sandbox("team-a", "s", "u1", "alice", true, false), at(170))
	rec, ok := tr.Delete(sandbox("team-a", "s", "u1", "alice", true, false), at(200))
	if !ok {
		t.Fatal("Delete returned no record for a tracked sandbox")
	}
	want := usage.Record{Schema: usage.SchemaVersion, Namespace: "team-a", Name: "s", UID: "u1", Claim: "claim-s",
		Principal: "alice", Start: at(0), End: at(200),
		Figures: usage.Figures{RunningSeconds: 90, SuspendedSeconds: 100, Wakes: 1, RequestedCPUCoreSeconds: 90, RequestedMemoryGiBSeconds: 90}}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if _, ok := tr.Delete(sandbox("team-a", "s", "u1", "alice", true, false), at(300)); ok {
		t.Error("a second Delete of the same UID returned a record again")
	}
	if got := testutil.ToFloat64(tr.running.WithLabelValues("team-a", usage.UnknownLabel, "alice")); got != 90 {
		t.Errorf("kubox_usage_running_seconds_total = %v, want 90", got)
	}
	if got := testutil.ToFloat64(tr.wakes.WithLabelValues("team-a", usage.UnknownLabel, "alice")); got != 1 {
		t.Errorf("kubox_usage_wakes_total = %v, want 1", got)
	}
}

// TestTrackerAttackPrincipalCardinality: a tenant labelling each sandbox with a new principal
// gets at most MaxPrincipals series (plus "other"), never one per sandbox.
func TestTrackerAttackPrincipalCardinality(t *testing.T) {
	tr := NewTracker(Config{PrincipalLabel: "example.com/user", MaxPrincipals: 3})
	for i := range 50 {
		uid := string(rune('a'+i%26)) + string(rune('a'+i/26))
		tr.Observe(sandbox("team-a", uid, uid, "p"+uid, true, false), at(0))
		tr.Delete(sandbox("team-a", uid, uid, "p"+uid, true, false), at(1))
	}
	if n := testutil.CollectAndCount(tr.running); n > 4 {
		t.Errorf("%d running-seconds series, want at most 4 (3 principals + other)", n)
	}
}
