package usage

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
)

// kubeletAnswer is the shape of a kubelet's /metrics/resource answer (v1.3x), trimmed.
const kubeletAnswer = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="main",namespace="team-a",pod="sb-1"} 11.5 1765000000000
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 5000.25 1765000000100
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="team-a",pod="sb-1"} 12.25 1765000000000
pod_cpu_usage_seconds_total{namespace="team-b",pod="sb-2"} 0.5 1765000001000
pod_cpu_usage_seconds_total{namespace="team-b",pod="cpu-only"} 3
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="team-a",pod="sb-1"} 1.073741824e+09 1765000000000
pod_memory_working_set_bytes{namespace="team-b",pod="sb-2"} 5.36870912e+08 1765000002000
# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
`

func TestParseResourceMetrics(t *testing.T) {
	readAt := time.UnixMilli(1765000009000)
	got, err := ParseResourceMetrics(strings.NewReader(kubeletAnswer), readAt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[PodKey]PodSample{
		{"team-a", "sb-1"}:     {CPUSeconds: 12.25, MemoryBytes: 1 << 30, HasCPU: true, HasMemory: true, At: time.UnixMilli(1765000000000)},
		{"team-b", "sb-2"}:     {CPUSeconds: 0.5, MemoryBytes: 512 << 20, HasCPU: true, HasMemory: true, At: time.UnixMilli(1765000002000)},
		{"team-b", "cpu-only"}: {CPUSeconds: 3, HasCPU: true, At: readAt},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseResourceMetrics (-want +got):\n%s", d)
	}
}

func TestParseResourceMetricsErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want string
	}{
		"not the text format": {"pod_cpu_usage_seconds_total{namespace=\"a\" 1\n", "parsing the kubelet's resource metrics"},
		"over the bound":      {strings.Repeat("#", MaxResourceMetricsBytes+1), "over 16 MiB"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseResourceMetrics(strings.NewReader(tc.in), time.Now())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseResourceMetrics error = %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMeasuredMeter(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	sample := func(s int, cpu, memGiB float64) PodSample {
		return PodSample{CPUSeconds: cpu, MemoryBytes: memGiB * gib, HasCPU: true, HasMemory: true, At: at(s)}
	}
	type add struct {
		pod     types.UID
		started time.Time
		s       PodSample
	}
	for name, tc := range map[string]struct {
		adds []add
		want *Measured
	}{
		"no sample: nothing measured": {want: nil},
		"one Pod sampled three times": {
			adds: []add{{"p1", at(0), sample(10, 2, 1)}, {"p1", at(0), sample(40, 8, 1)}, {"p1", at(0), sample(70, 9, 2)}},
			// CPU: 2 (from the start) + 6 + 1. Memory: 0→1 GiB over 10 s, 1 over 30 s, 1→2 over 30 s.
			want: &Measured{CPUSeconds: 9, MemoryGiBSeconds: 5 + 30 + 45, Samples: 3},
		},
		"a resume: the new Pod's counter starts at zero": {
			adds: []add{{"p1", at(0), sample(10, 4, 1)}, {"p2", at(100), sample(110, 1, 1)}, {"p2", at(100), sample(120, 3, 1)}},
			want: &Measured{CPUSeconds: 4 + 1 + 2, MemoryGiBSeconds: 5 + 5 + 10, Samples: 3},
		},
		"a repeated or older sample adds nothing": {
			adds: []add{{"p1", at(0), sample(10, 4, 1)}, {"p1", at(0), sample(10, 4, 1)}, {"p1", at(0), sample(5, 1, 1)}},
			want: &Measured{CPUSeconds: 4, MemoryGiBSeconds: 5, Samples: 1},
		},
		"a counter that went down restarted": {
			adds: []add{{"p1", at(0), sample(10, 4, 0)}, {"p1", at(0), sample(20, 1, 0)}},
			want: &Measured{CPUSeconds: 5, Samples: 2},
		},
		"a sample missing memory is not counted": {
			adds: []add{{"p1", at(0), PodSample{CPUSeconds: 4, HasCPU: true, At: at(10)}}},
			want: nil,
		},
		"an unknown Pod start counts no memory before the first sample": {
			adds: []add{{"p1", time.Time{}, sample(10, 4, 1)}},
			want: &Measured{CPUSeconds: 4, Samples: 1},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var mm MeasuredMeter
			for _, a := range tc.adds {
				mm.Add(a.pod, a.started, a.s)
			}
			approx := cmpopts.EquateApprox(0, 1e-9)
			if d := cmp.Diff(tc.want, mm.Measured(), approx); d != "" {
				t.Errorf("Measured (-want +got):\n%s", d)
			}
		})
	}
}
