package sandboxclaim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace/noop"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubox-dev/kubox/internal/metrics"
)

// phaseCounts returns the observation count of kubox_claim_phase_seconds per phase.
func phaseCounts(t *testing.T) map[string]uint64 {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "kubox_claim_phase_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		}
	}
	return out
}

func delta(before, after map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func TestRecordFirstReady(t *testing.T) {
	if err := metrics.RegisterClaimMetrics(); err != nil {
		t.Fatal(err)
	}
	ready := sandboxWith("s", nil, sbCond("Ready", metav1.ConditionTrue, "DependenciesReady", "Pod is Ready", testEarlier))
	all := map[string]uint64{"queued": 1, "bound": 1, "sandbox_ready": 1, "status_written": 1}

	t.Run("a claim seen from its creation records every phase, once", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow.Time)
		r := NewReconciler(nil, nil, nil, nil, clk, noop.NewTracerProvider(), nil, nil)
		claim := makeClaim().Obj()
		before := phaseCounts(t)
		r.timeline.observe(claim.UID)
		clk.Step(5 * time.Millisecond)
		r.timeline.reconciled(claim)
		clk.Step(10 * time.Millisecond)
		r.timeline.bound(claim.UID, clk.Now())
		r.timeline.sandboxReady(claim.UID)
		clk.Step(time.Millisecond)
		r.recordFirstReady(claim, ready, clk.Now())
		r.recordFirstReady(claim, ready, clk.Now())
		if diff := cmp.Diff(all, delta(before, phaseCounts(t))); diff != "" {
			t.Errorf("phase observations mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("a claim already Ready when first seen records nothing", func(t *testing.T) {
		r := NewReconciler(nil, nil, nil, nil, clocktesting.NewFakeClock(testNow.Time), noop.NewTracerProvider(), nil, nil)
		claim := makeClaim().Condition(claimCond("Ready", metav1.ConditionTrue, "DependenciesReady", "", testEarlier)).Obj()
		before := phaseCounts(t)
		r.timeline.observe(claim.UID)
		r.timeline.reconciled(claim)
		r.recordFirstReady(claim, ready, testNow.Time)
		if got := delta(before, phaseCounts(t)); len(got) != 0 {
			t.Errorf("phase observations = %v; want none", got)
		}
	})

	t.Run("a claim found bound after a restart records only what this process saw", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow.Time)
		r := NewReconciler(nil, nil, nil, nil, clk, noop.NewTracerProvider(), nil, nil)
		claim := makeClaim().Obj()
		before := phaseCounts(t)
		r.timeline.observe(claim.UID)
		r.timeline.reconciled(claim)
		r.timeline.sandboxReady(claim.UID)
		r.recordFirstReady(claim, ready, clk.Now())
		if diff := cmp.Diff(map[string]uint64{"queued": 1, "status_written": 1}, delta(before, phaseCounts(t))); diff != "" {
			t.Errorf("phase observations mismatch (-want +got):\n%s", diff)
		}
	})
}
