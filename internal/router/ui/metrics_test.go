package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
# TYPE agent_sandboxes gauge
agent_sandboxes{created_by="",expired="false",launch_type="cold",namespace="a",operating_mode="Running",owned_by="SandboxWarmPool",ready_condition="true",sandbox_template="py"} 2
agent_sandboxes{created_by="",expired="false",launch_type="warm",namespace="a",operating_mode="Running",owned_by="SandboxWarmPool",ready_condition="true",sandbox_template="py"} 1
agent_sandboxes{created_by="",expired="false",launch_type="cold",namespace="a",operating_mode="Running",owned_by="SandboxWarmPool",ready_condition="false",sandbox_template="py"} 4
agent_sandboxes{created_by="",expired="false",launch_type="warm",namespace="a",operating_mode="Running",owned_by="SandboxClaim",ready_condition="true",sandbox_template="py"} 7
agent_sandboxes{namespace="b",owned_by="SandboxWarmPool",ready_condition="true",sandbox_template="q \"x}\" \\ y"} 3
`

func TestParseMetrics(t *testing.T) {
	got, dropped := parseMetrics(strings.NewReader(exposition))
	want := sample{
		totals: map[string]float64{claimLatencySum: 1020, claimLatencyCount: 4, claimsCreated: 4},
		pools: map[poolKey]poolCount{
			// A claim's sandbox (owned_by SandboxClaim) is no longer the pool's.
			{"a", "py"}:         {ready: 3, total: 7},
			{"b", `q "x}" \ y`}: {ready: 3, total: 3},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(sample{}, poolCount{})); diff != "" || dropped != 0 {
		t.Errorf("parseMetrics (-want +got):\n%s\ndropped %d; want 0", diff, dropped)
	}
}

func TestParseMetricsBoundsThePools(t *testing.T) {
	var b strings.Builder
	for i := range maxPoolSeries + 5 {
		fmt.Fprintf(&b, "agent_sandboxes{namespace=\"ns-%d\",owned_by=\"SandboxWarmPool\",ready_condition=\"true\",sandbox_template=\"t\"} 1\n", i)
	}
	// A pair already kept is still counted past the bound.
	b.WriteString(`agent_sandboxes{namespace="ns-0",owned_by="SandboxWarmPool",ready_condition="false",sandbox_template="t"} 1` + "\n")
	got, dropped := parseMetrics(strings.NewReader(b.String()))
	if len(got.pools) != maxPoolSeries || dropped != 5 {
		t.Errorf("parseMetrics kept %d pairs and dropped %d; want %d and 5", len(got.pools), dropped, maxPoolSeries)
	}
	if c := got.pools[poolKey{"ns-0", "t"}]; c != (poolCount{ready: 1, total: 2}) {
		t.Errorf("ns-0/t counts %+v; want 1 ready of 2", c)
	}
}

func TestScraperIntervals(t *testing.T) {
	s := newScraper("http://controller/metrics", nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	totals := func(sum, count, created float64) sample {
		return sample{totals: map[string]float64{claimLatencySum: sum, claimLatencyCount: count, claimsCreated: created}}
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
	if diff := cmp.Diff(want, s.points, cmpopts.IgnoreUnexported(point{})); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	for i := range scrapePoints + 10 {
		s.add(t0.Add(time.Duration(i)*time.Minute), totals(90, 2, 2))
	}
	if len(s.points) != scrapePoints {
		t.Errorf("The ring holds %d points; want at most %d", len(s.points), scrapePoints)
	}
}

func TestPoolsOf(t *testing.T) {
	s := newScraper("http://controller/metrics", nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * scrapeInterval) }
	scrape := func(i int, pools map[poolKey]poolCount) {
		s.add(at(i), sample{totals: map[string]float64{}, pools: pools})
	}
	scrape(0, nil)
	scrape(1, map[poolKey]poolCount{{"a", "py"}: {ready: 1, total: 2}, {"b", "secret"}: {ready: 5, total: 5}})
	scrape(2, map[poolKey]poolCount{{"a", "py"}: {ready: 2, total: 2}, {"a", "go"}: {ready: 1, total: 1}})
	scrape(3, map[poolKey]poolCount{{"a", "go"}: {ready: 0, total: 1}})
	want := []poolSeries{
		{Template: "go", Points: []poolPoint{{Time: at(2), Ready: 1, Total: 1}, {Time: at(3), Ready: 0, Total: 1}}},
		// A template absent from a scrape had no members then.
		{Template: "py", Points: []poolPoint{{Time: at(1), Ready: 1, Total: 2}, {Time: at(2), Ready: 2, Total: 2}, {Time: at(3)}}},
	}
	if diff := cmp.Diff(want, s.poolsOf("a")); diff != "" {
		t.Errorf("poolsOf(a) (-want +got):\n%s", diff)
	}
	if got := s.poolsOf("c"); len(got) != 0 {
		t.Errorf("poolsOf(c) = %v; want none", got)
	}
	// The points share one copy of each key.
	if len(s.keys) != 3 {
		t.Errorf("The scraper holds %d keys; want 3", len(s.keys))
	}
}
