package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestClaimLatencyBucketsMatchAgentSandbox(t *testing.T) {
	// agent-sandbox's buckets for its three claim startup histograms, verbatim.
	want := []float64{100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000, 10000, 30000, 60000, 120000, 240000}
	if diff := cmp.Diff(want, claimLatencyBuckets); diff != "" {
		t.Errorf("buckets mismatch (-want +got):\n%s", diff)
	}
}

// claimSeries renders one series of a claim latency histogram with a single observation of ms.
func claimSeries(name, labels string, ms float64) string {
	var b strings.Builder
	for _, le := range []string{"100", "250", "500", "750", "1000", "1250", "1500", "2000", "2500", "5000", "10000", "30000", "60000", "120000", "240000", "+Inf"} {
		n := 0
		if le == "+Inf" || mustFloat(le) >= ms {
			n = 1
		}
		b.WriteString(name + "_bucket{" + labels + `,le="` + le + `"} ` + itoa(n) + "\n")
	}
	b.WriteString(name + "_sum{" + labels + "} " + ftoa(ms) + "\n")
	b.WriteString(name + "_count{" + labels + "} 1\n")
	return b.String()
}

func TestClaimLatencies(t *testing.T) {
	type observeFunc func(launchType, template string, d time.Duration)
	histograms := map[string]struct {
		h       *prometheus.HistogramVec
		observe observeFunc
		help    string
	}{
		"agent_sandbox_claim_startup_latency_ms":            {claimStartupLatency, ObserveClaimStartupLatency, "Time in milliseconds from an admission webhook stamping a SandboxClaim (annotation agents.x-k8s.io/webhook-first-observed-at) to the claim first being Ready. Claims without that annotation are not observed."},
		"agent_sandbox_claim_controller_startup_latency_ms": {claimControllerStartupLatency, ObserveClaimControllerStartupLatency, "Time in milliseconds from the controller first seeing a SandboxClaim to the claim first being Ready."},
		"agent_sandbox_client_claim_startup_latency_ms":     {clientClaimStartupLatency, ObserveClientClaimStartupLatency, "Time in milliseconds from a client SDK asking for a SandboxClaim (annotation agents.x-k8s.io/client-first-requested-at) to the claim first being Ready. Claims without that annotation are not observed; the client's clock may differ from the controller's."},
	}
	cases := map[string]struct {
		launchType, template string
		d                    time.Duration
		labels               string // "" means no series
		ms                   float64
	}{
		"a warm claim in the first bucket": {
			launchType: LaunchTypeWarm, template: "python", d: 42 * time.Millisecond,
			labels: `launch_type="warm",sandbox_template="python"`, ms: 42,
		},
		"a cold claim on a bucket boundary": {
			launchType: LaunchTypeCold, template: "python", d: 1250 * time.Millisecond,
			labels: `launch_type="cold",sandbox_template="python"`, ms: 1250,
		},
		"missing labels get agent-sandbox's sentinels": {
			d: time.Second, labels: `launch_type="unknown",sandbox_template="__unknown__"`, ms: 1000,
		},
		"a negative latency is dropped": {launchType: LaunchTypeWarm, template: "python", d: -time.Millisecond},
	}
	for metric, hist := range histograms {
		for name, tc := range cases {
			t.Run(metric+"/"+name, func(t *testing.T) {
				hist.h.Reset()
				t.Cleanup(hist.h.Reset)
				hist.observe(tc.launchType, tc.template, tc.d)
				want := ""
				if tc.labels != "" {
					want = "# HELP " + metric + " " + hist.help + "\n# TYPE " + metric + " histogram\n" + claimSeries(metric, tc.labels, tc.ms)
				}
				if err := testutil.CollectAndCompare(hist.h, strings.NewReader(want)); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

func TestCountClaimCreation(t *testing.T) {
	const header = `# HELP agent_sandbox_claim_creation_total Number of Sandboxes created (cold) or bound from a warm pool (warm) for SandboxClaims.
# TYPE agent_sandbox_claim_creation_total counter
`
	cases := map[string]struct {
		c    ClaimCreation
		want string
	}{
		"a warm bind of a ready member by the Python client": {
			c:    ClaimCreation{Namespace: "ns", Template: "python", LaunchType: LaunchTypeWarm, WarmPool: "pool", Ready: true, CreatedBy: "python-client"},
			want: `agent_sandbox_claim_creation_total{created_by="python-client",launch_type="warm",namespace="ns",pod_condition="ready",sandbox_template="python",warmpool_name="pool"} 1`,
		},
		"a cold start by kubox's TypeScript SDK": {
			c:    ClaimCreation{Namespace: "ns", Template: "python", LaunchType: LaunchTypeCold, CreatedBy: "typescript-client"},
			want: `agent_sandbox_claim_creation_total{created_by="typescript-client",launch_type="cold",namespace="ns",pod_condition="not_ready",sandbox_template="python",warmpool_name=""} 1`,
		},
		"a cold start of a template claim by an unknown client": {
			c:    ClaimCreation{Namespace: "ns", Template: "python", LaunchType: LaunchTypeCold, CreatedBy: "kubectl"},
			want: `agent_sandbox_claim_creation_total{created_by="unknown",launch_type="cold",namespace="ns",pod_condition="not_ready",sandbox_template="python",warmpool_name=""} 1`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claimCreationTotal.Reset()
			t.Cleanup(claimCreationTotal.Reset)
			CountClaimCreation(tc.c)
			if err := testutil.CollectAndCompare(claimCreationTotal, strings.NewReader(header+tc.want+"\n")); err != nil {
				t.Error(err)
			}
		})
	}
}

// phaseSeries renders one series of kubox_claim_phase_seconds with a single observation of sec.
func phaseSeries(phase string, sec float64) string {
	var b strings.Builder
	for _, le := range []string{"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "120", "300", "+Inf"} {
		n := 0
		if le == "+Inf" || mustFloat(le) >= sec {
			n = 1
		}
		b.WriteString(`kubox_claim_phase_seconds_bucket{le="` + le + `",phase="` + phase + `"} ` + itoa(n) + "\n")
	}
	b.WriteString(`kubox_claim_phase_seconds_sum{phase="` + phase + `"} ` + ftoa(sec) + "\n")
	b.WriteString(`kubox_claim_phase_seconds_count{phase="` + phase + `"} 1` + "\n")
	return b.String()
}

func TestObserveClaimPhase(t *testing.T) {
	claimPhaseSeconds.Reset()
	t.Cleanup(claimPhaseSeconds.Reset)
	ObserveClaimPhase(ClaimPhaseBound, 4*time.Millisecond)
	ObserveClaimPhase(ClaimPhaseBound, -time.Millisecond)
	ObserveClaimPhase(ClaimPhaseStatusWritten, 2*time.Second)
	want := `# HELP kubox_claim_phase_seconds Time in seconds a SandboxClaim spent in each phase on its way to Ready: queued (informer to first reconcile), bound (to having a sandbox), sandbox_ready (to the sandbox being Ready), status_written (to the claim's Ready status being written).
# TYPE kubox_claim_phase_seconds histogram
` + phaseSeries(ClaimPhaseBound, 0.004) + phaseSeries(ClaimPhaseStatusWritten, 2)
	if err := testutil.CollectAndCompare(claimPhaseSeconds, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestRegisterClaim(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := registerClaim(reg); err != nil {
		t.Fatalf("registerClaim() = %v", err)
	}
	t.Cleanup(func() { claimControllerStartupLatency.Reset(); claimCreationTotal.Reset(); claimPhaseSeconds.Reset() })
	ObserveClaimControllerStartupLatency(LaunchTypeWarm, "python", time.Second)
	CountClaimCreation(ClaimCreation{Namespace: "ns", LaunchType: LaunchTypeWarm})
	ObserveClaimPhase(ClaimPhaseQueued, time.Millisecond)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// agent-sandbox's names are kept for compatibility (milliseconds instead of seconds).
		if strings.HasPrefix(p.Metric, "agent_sandbox_") && strings.HasSuffix(p.Metric, "_latency_ms") {
			continue
		}
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if err := registerClaim(reg); err == nil {
		t.Error("a second registerClaim() on the same registry = nil; want an AlreadyRegistered error")
	}
	for i := range 2 {
		if err := RegisterClaimMetrics(); err != nil {
			t.Fatalf("RegisterClaimMetrics() call %d = %v", i+1, err)
		}
	}
}
