package usage

import (
	"bytes"
	"fmt"
	"io"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's resource metrics (its /metrics/resource endpoint) that measured usage reads: the
// Pod's cgroup, so a gVisor sandbox's Sentry and gofer count with the code it runs.
const (
	// PodCPUMetric is the CPU time a Pod used since it started, in seconds (a counter).
	PodCPUMetric = "pod_cpu_usage_seconds_total"
	// PodMemoryMetric is a Pod's working-set memory when the kubelet sampled it, in bytes.
	PodMemoryMetric = "pod_memory_working_set_bytes"
	// MaxResourceMetricsBytes bounds one kubelet answer (a node of 110 Pods sends about 50 KiB).
	MaxResourceMetricsBytes = 16 << 20
)

const gib = 1 << 30

// PodKey names a Pod in a kubelet's resource metrics.
type PodKey struct{ Namespace, Name string }

// PodSample is one read of a Pod's resource metrics.
type PodSample struct {
	CPUSeconds  float64
	MemoryBytes float64
	// HasCPU and HasMemory say which of the two the kubelet reported.
	HasCPU, HasMemory bool
	// At is when the kubelet sampled the figures (the metric's timestamp, or the read's time
	// when the kubelet gave none).
	At time.Time
}

// ParseResourceMetrics reads a kubelet's /metrics/resource answer (the Prometheus text format)
// and returns its Pod samples; readAt dates a sample without a timestamp. At most
// MaxResourceMetricsBytes are read.
func ParseResourceMetrics(r io.Reader, readAt time.Time) (map[PodKey]PodSample, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxResourceMetricsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the kubelet's resource metrics: %w", err)
	}
	if len(b) > MaxResourceMetricsBytes {
		return nil, fmt.Errorf("the kubelet's resource metrics are over %d MiB: not read", MaxResourceMetricsBytes>>20)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("parsing the kubelet's resource metrics: %w", err)
	}
	out := map[PodKey]PodSample{}
	for name, set := range map[string]func(*PodSample, float64){
		PodCPUMetric:    func(s *PodSample, v float64) { s.CPUSeconds, s.HasCPU = v, true },
		PodMemoryMetric: func(s *PodSample, v float64) { s.MemoryBytes, s.HasMemory = v, true },
	} {
		f := families[name]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			k := PodKey{Namespace: label(m, "namespace"), Name: label(m, "pod")}
			if k.Name == "" {
				continue
			}
			v, ok := value(m)
			if !ok {
				continue
			}
			s := out[k]
			set(&s, v)
			if at := time.UnixMilli(m.GetTimestampMs()); m.TimestampMs != nil && at.After(s.At) {
				s.At = at
			}
			out[k] = s
		}
	}
	for k, s := range out {
		if s.At.IsZero() {
			s.At = readAt
			out[k] = s
		}
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value is the metric's value, whether the kubelet typed it a counter, a gauge or untyped.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// MeasuredMeter integrates one sandbox's samples into Measured figures. A sandbox has one Pod at
// a time, but a new one after every resume, whose counter starts at zero: each sample comes with
// its Pod's UID and start. Not safe for concurrent use.
type MeasuredMeter struct {
	m    Measured
	pod  types.UID
	last PodSample
}

// Add adds a sample of Pod pod, started at started (zero when unknown). A sample no later than
// the last one of the same Pod adds nothing, nor does one missing a figure.
//
// CPU: the counter's growth since the last sample; a Pod seen for the first time adds its
// counter whole (it counts from the Pod's start); a counter that went down restarted and adds
// its value. Memory: the working set integrated over time by trapezoids between the samples of
// one Pod, and from the Pod's start (taken as 0 bytes then) to its first sample.
func (mm *MeasuredMeter) Add(pod types.UID, started time.Time, s PodSample) {
	if !s.HasCPU || !s.HasMemory {
		return
	}
	if mm.m.Samples > 0 && pod == mm.pod {
		if !s.At.After(mm.last.At) {
			return
		}
		cpu := s.CPUSeconds - mm.last.CPUSeconds
		if cpu < 0 {
			cpu = s.CPUSeconds
		}
		mm.m.CPUSeconds += cpu
		mm.m.MemoryGiBSeconds += (mm.last.MemoryBytes + s.MemoryBytes) / 2 * s.At.Sub(mm.last.At).Seconds() / gib
	} else {
		mm.m.CPUSeconds += s.CPUSeconds
		if !started.IsZero() && s.At.After(started) {
			mm.m.MemoryGiBSeconds += s.MemoryBytes / 2 * s.At.Sub(started).Seconds() / gib
		}
	}
	mm.pod, mm.last = pod, s
	mm.m.Samples++
}

// Measured returns the figures so far; nil before the first sample.
func (mm *MeasuredMeter) Measured() *Measured {
	if mm.m.Samples == 0 {
		return nil
	}
	m := mm.m
	return &m
}
