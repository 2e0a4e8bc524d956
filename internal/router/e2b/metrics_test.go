package e2b

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestE2BMetricOf maps metrics.k8s.io's PodMetrics (as the API server answers it) and the
// sandbox's limits to E2B's SandboxMetric.
func TestE2BMetricOf(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	pod := map[string]any{"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics", "timestamp": at.Format(time.RFC3339), "window": "10s",
		"containers": []any{
			map[string]any{"name": "main", "usage": map[string]any{"cpu": "450m", "memory": "96Mi"}},
			map[string]any{"name": "kubox-agent", "usage": map[string]any{"cpu": "50m", "memory": "32Mi"}},
		}}
	pm := &podMetrics{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pod, pm); err != nil {
		t.Fatal(err)
	}
	base := e2bMetric{Timestamp: at, TimestampUnix: at.Unix(), MemUsed: 128 << 20}
	for name, tc := range map[string]struct {
		limits corev1.ResourceList
		want   func(m e2bMetric) e2bMetric
	}{
		"two cores, 512Mi": {
			limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			want:   func(m e2bMetric) e2bMetric { m.CPUCount, m.CPUUsedPct, m.MemTotal = 2, 25, 512<<20; return m },
		},
		"1500m rounds up to 2 cores": {
			limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
			want:   func(m e2bMetric) e2bMetric { m.CPUCount, m.CPUUsedPct = 2, 33.33; return m },
		},
		"no limits: percent of one core, no totals": {
			limits: corev1.ResourceList{},
			want:   func(m e2bMetric) e2bMetric { m.CPUUsedPct = 50; return m },
		},
	} {
		if diff := cmp.Diff(tc.want(base), e2bMetricOf(pm, tc.limits)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", name, diff)
		}
	}
}
