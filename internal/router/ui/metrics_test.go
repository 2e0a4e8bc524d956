package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const exposition = `# HELP agent_sandbox_claim_controller_startup_latency_ms Time...
# TYPE agent_sandbox_claim_controller_startup_latency_ms histogram
agent_sandbox_claim_controller_startup_latency_ms_bucket{launch_type="warm",le="50"} 3
agent_sandbox_claim_controller_startup_latency_ms_sum{launch_type="warm",sandbox_template="py"} 120
agent_sandbox_claim_controller_startup_latency_ms_count{launch_type="warm",sandbox_template="py"} 3
agent_sandbox_claim_controller_startup_latency_ms_sum{launch_type="cold",sandbox_template="a b}"} 900 1700000000000
agent_sandbox_claim_controller_startup_latency_ms_count{launch_type="cold",sandbox_template="a b}"} 1
agent_sandbox_claim_creation_total{namespace="x"} 4
agent_sandbox_claim_creation_total_other 99
`

func TestSumSeries(t *testing.T) {
	got := sumSeries(strings.NewReader(exposition), claimLatencySum, claimLatencyCount, claimsCreated)
	want := map[string]float64{claimLatencySum: 1020, claimLatencyCount: 4, claimsCreated: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sumSeries (-want +got):\n%s", diff)
	}
}

func TestScraperIntervals(t *testing.T) {
	s := newScraper("http://controller/metrics", nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	totals := func(sum, count, created float64) map[string]float64 {
		return map[string]float64{claimLatencySum: sum, claimLatencyCount: count, claimsCreated: created}
	}
	s.add(t0, totals(100, 2, 2))                     // the first scrape: no interval yet
	s.add(t0.Add(15*time.Second), totals(400, 5, 5)) // 3 claims, 300 ms in all
	s.add(t0.Add(30*time.Second), totals(400, 5, 5)) // none
	s.add(t0.Add(45*time.Second), totals(50, 1, 1))  // the controller restarted: skipped
	s.add(t0.Add(60*time.Second), totals(90, 2, 2))  // 1 claim of 40 ms
	mean := func(v float64) *float64 { return &v }
	want := []point{
		{Time: t0.Add(15 * time.Second), Claims: 3, LatencyMs: mean(100), Created: 3},
		{Time: t0.Add(30 * time.Second)},
		{Time: t0.Add(60 * time.Second), Claims: 1, LatencyMs: mean(40), Created: 1},
	}
	if diff := cmp.Diff(want, s.points); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	for i := range scrapePoints + 10 {
		s.add(t0.Add(time.Duration(i)*time.Minute), totals(90, 2, 2))
	}
	if len(s.points) != scrapePoints {
		t.Errorf("The ring holds %d points; want at most %d", len(s.points), scrapePoints)
	}
}
