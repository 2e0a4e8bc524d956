package metrics

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/version"
)

const latencyHeader = `# HELP agent_sandbox_creation_latency_ms Latency from Sandbox creation to the Sandbox Ready condition in milliseconds. For warm launches the Sandbox is created by its SandboxWarmPool, so this measures the pool's provisioning time.
# TYPE agent_sandbox_creation_latency_ms histogram
`

// latencySeries renders one histogram series with a single observation of ms.
func latencySeries(labels string, ms float64) string {
	var b strings.Builder
	for _, le := range []string{"50", "100", "250", "500", "1000", "2500", "5000", "10000", "30000", "60000", "120000", "240000", "300000", "600000", "+Inf"} {
		n := 0
		if le == "+Inf" || mustFloat(le) >= ms {
			n = 1
		}
		b.WriteString("agent_sandbox_creation_latency_ms_bucket{" + labels + `,le="` + le + `"} ` + itoa(n) + "\n")
	}
	b.WriteString("agent_sandbox_creation_latency_ms_sum{" + labels + "} " + ftoa(ms) + "\n")
	b.WriteString("agent_sandbox_creation_latency_ms_count{" + labels + "} 1\n")
	return b.String()
}

func TestObserveCreationLatency(t *testing.T) {
	cases := map[string]struct {
		namespace, launchType, template string
		d                               time.Duration
		want                            string // exposition text; "" means no series
	}{
		"cold launch lands in the 2500 ms bucket": {
			namespace: "ns", launchType: LaunchTypeCold, template: "python", d: 1500 * time.Millisecond,
			want: latencySeries(`launch_type="cold",namespace="ns",sandbox_template="python"`, 1500),
		},
		"warm launch keeps sub-millisecond precision": {
			namespace: "ns", launchType: LaunchTypeWarm, template: "python", d: 40*time.Millisecond + 500*time.Microsecond,
			want: latencySeries(`launch_type="warm",namespace="ns",sandbox_template="python"`, 40.5),
		},
		"exactly on a bucket boundary counts in that bucket": {
			namespace: "ns", launchType: LaunchTypeCold, template: "python", d: 600 * time.Second,
			want: latencySeries(`launch_type="cold",namespace="ns",sandbox_template="python"`, 600000),
		},
		"missing launch type and template use agent-sandbox's sentinels": {
			namespace: "ns", d: time.Second,
			want: latencySeries(`launch_type="unknown",namespace="ns",sandbox_template="__unknown__"`, 1000),
		},
		"negative latency is dropped": {
			namespace: "ns", launchType: LaunchTypeCold, template: "python", d: -time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			creationLatency.Reset()
			t.Cleanup(creationLatency.Reset)
			ObserveCreationLatency(tc.namespace, tc.launchType, tc.template, tc.d)
			want := ""
			if tc.want != "" {
				want = latencyHeader + tc.want
			}
			if err := testutil.CollectAndCompare(creationLatency, strings.NewReader(want)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCreationLatencyBucketsMatchAgentSandbox(t *testing.T) {
	// agent-sandbox's buckets, verbatim: histograms from both controllers must share `le` values.
	want := []float64{50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 240000, 300000, 600000}
	if diff := cmp.Diff(want, creationLatencyBuckets); diff != "" {
		t.Errorf("buckets mismatch (-want +got):\n%s", diff)
	}
}

func TestBuildInfo(t *testing.T) {
	info := version.Info{
		GitVersion: "v0.1.0", GitCommit: "abc123", BuildDate: "2026-12-02T17:00:00Z",
		GoVersion: "go1.26.8", Compiler: "gc", Platform: "linux/amd64",
	}
	want := `# HELP agent_sandbox_build_info Build metadata of the controller, exposed as labels with a constant value of 1.
# TYPE agent_sandbox_build_info gauge
agent_sandbox_build_info{build_date="2026-12-02T17:00:00Z",compiler="gc",git_commit="abc123",git_version="v0.1.0",go_version="go1.26.8",platform="linux/amd64"} 1
`
	if err := testutil.CollectAndCompare(newBuildInfo(info), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestRegister(t *testing.T) {
	reader := &informertest.FakeInformers{Scheme: newScheme(t)}
	ctx := context.Background()
	inf, err := reader.FakeInformerFor(ctx, &sandboxv1beta1.Sandbox{})
	if err != nil {
		t.Fatal(err)
	}
	addSandbox := func() { inf.Add(makeSandbox("a", "ns").obj()) } // after a registration

	t.Run("one registry gets every family, lint-clean", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		if err := register(ctx, reg, reader, logr.Discard()); err != nil {
			t.Fatalf("register() = %v", err)
		}
		addSandbox()
		t.Cleanup(creationLatency.Reset)
		ObserveCreationLatency("ns", LaunchTypeCold, "python", time.Second)
		got := gatheredNames(t, reg)
		want := []string{"agent_sandbox_build_info", "agent_sandbox_creation_latency_ms", "agent_sandboxes"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("gathered families mismatch (-want +got):\n%s", diff)
		}
		problems, err := testutil.GatherAndLint(reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			// agent-sandbox's names are kept for compatibility even where promlint prefers others
			// (milliseconds instead of seconds).
			if p.Metric == "agent_sandbox_creation_latency_ms" {
				continue
			}
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	})

	t.Run("a second registration on the same registry fails", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		if err := register(ctx, reg, reader, logr.Discard()); err != nil {
			t.Fatalf("first register() = %v", err)
		}
		if err := register(ctx, reg, reader, logr.Discard()); err == nil {
			t.Error("second register() = nil, want an AlreadyRegistered error")
		}
	})

	t.Run("Register uses controller-runtime's registry and is idempotent", func(t *testing.T) {
		for i := range 2 {
			if err := Register(ctx, reader, logr.Discard()); err != nil {
				t.Fatalf("Register() call %d = %v", i+1, err)
			}
		}
		addSandbox()
		got := gatheredNames(t, crmetrics.Registry)
		for _, name := range []string{"agent_sandbox_build_info", "agent_sandboxes"} {
			if !contains(got, name) {
				t.Errorf("controller-runtime registry lacks %s; has %v", name, got)
			}
		}
	})
}

func gatheredNames(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather() = %v", err)
	}
	var names []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "agent_") {
			names = append(names, mf.GetName())
		}
	}
	return names
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func mustFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return f
}

func itoa(n int) string { return strconv.Itoa(n) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
