package usage

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/usage"
)

// Config configures a Tracker.
type Config struct {
	// PrincipalLabel is the Sandbox label whose value is the principal (--usage-principal-label);
	// empty: every sandbox's principal is "unknown".
	PrincipalLabel string
	// MaxPrincipals bounds the distinct principal label values of the metrics (default 100).
	MaxPrincipals int
	// MaxTemplates bounds the distinct template label values of the metrics (default 100).
	MaxTemplates int
}

// Tracker meters every observed sandbox. Safe for concurrent use.
type Tracker struct {
	cfg                   Config
	principals, templates *usage.Bounded

	mu      sync.Mutex
	tracked map[types.UID]*tracked

	running, suspended, cpu, mem, wakes *prometheus.CounterVec
}

type tracked struct {
	meter    *usage.Meter
	record   usage.Record // identity fields; figures filled at Delete
	reported usage.Figures
	labels   []string
	state    usage.State
}

// NewTracker returns a Tracker; register Collectors with the controller's registry.
func NewTracker(cfg Config) *Tracker {
	if cfg.MaxPrincipals <= 0 {
		cfg.MaxPrincipals = 100
	}
	if cfg.MaxTemplates <= 0 {
		cfg.MaxTemplates = 100
	}
	labels := []string{"namespace", "template", "principal"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	return &Tracker{
		cfg: cfg, principals: usage.NewBounded(cfg.MaxPrincipals), templates: usage.NewBounded(cfg.MaxTemplates),
		tracked:   make(map[types.UID]*tracked),
		running:   counter("kubox_usage_running_seconds_total", "Seconds sandboxes were Ready, as the controller observed."),
		suspended: counter("kubox_usage_suspended_seconds_total", "Seconds sandboxes were Suspended, as the controller observed."),
		cpu:       counter("kubox_usage_requested_cpu_core_seconds_total", "CPU cores requested by sandboxes' Pods times running seconds (requested, not measured)."),
		mem:       counter("kubox_usage_requested_memory_gib_seconds_total", "Memory GiB requested by sandboxes' Pods times running seconds (requested, not measured)."),
		wakes:     counter("kubox_usage_wakes_total", "Suspended-to-running transitions of sandboxes."),
	}
}

// Collectors are the Tracker's metrics.
func (t *Tracker) Collectors() []prometheus.Collector {
	return []prometheus.Collector{t.running, t.suspended, t.cpu, t.mem, t.wakes}
}

// Observe feeds the sandbox's current state, as seen at now.
func (t *Tracker) Observe(sb *sandboxv1beta1.Sandbox, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.tracked[sb.UID]
	if tr == nil {
		tr = t.start(sb, now)
		t.tracked[sb.UID] = tr
	}
	tr.state = usage.StateOf(sb)
	tr.meter.Observe(now, tr.state)
	t.report(tr, now)
}

// Delete ends the sandbox's meter at now and returns its record; false if the sandbox was
// never observed (or was already deleted).
func (t *Tracker) Delete(sb *sandboxv1beta1.Sandbox, now time.Time) (usage.Record, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.tracked[sb.UID]
	if tr == nil {
		return usage.Record{}, false
	}
	delete(t.tracked, sb.UID)
	t.report(tr, now)
	rec := tr.record
	rec.End = now
	rec.Figures = tr.meter.Figures(now)
	return rec, true
}

func (t *Tracker) start(sb *sandboxv1beta1.Sandbox, now time.Time) *tracked {
	rec := usage.Record{Schema: usage.SchemaVersion, Namespace: sb.Namespace, Name: sb.Name, UID: string(sb.UID), Start: now}
	if !sb.CreationTimestamp.IsZero() && sb.CreationTimestamp.Time.Before(now) {
		rec.Start = sb.CreationTimestamp.Time
	}
	for _, o := range sb.OwnerReferences {
		switch o.Kind {
		case "SandboxClaim":
			rec.Claim = o.Name
		case "SandboxWarmPool":
			rec.Pool = o.Name
		}
	}
	if t.cfg.PrincipalLabel != "" {
		rec.Principal = sb.Labels[t.cfg.PrincipalLabel]
	}
	labels := []string{sb.Namespace, t.templates.Value(rec.Template), t.principals.Value(rec.Principal)}
	return &tracked{meter: usage.NewMeter(usage.RequestsOf(&sb.Spec.PodTemplate.Spec)), record: rec, labels: labels}
}

// report adds what the meter counted since the last report to the counters.
func (t *Tracker) report(tr *tracked, now time.Time) {
	f := tr.meter.Figures(now)
	p := tr.reported
	t.running.WithLabelValues(tr.labels...).Add(f.RunningSeconds - p.RunningSeconds)
	t.suspended.WithLabelValues(tr.labels...).Add(f.SuspendedSeconds - p.SuspendedSeconds)
	t.cpu.WithLabelValues(tr.labels...).Add(f.RequestedCPUCoreSeconds - p.RequestedCPUCoreSeconds)
	t.mem.WithLabelValues(tr.labels...).Add(f.RequestedMemoryGiBSeconds - p.RequestedMemoryGiBSeconds)
	t.wakes.WithLabelValues(tr.labels...).Add(float64(f.Wakes - p.Wakes))
	tr.reported = f
}

// State is the last state the Tracker observed for the sandbox with uid; false if it tracks
// none.
func (t *Tracker) State(uid types.UID) (usage.State, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.tracked[uid]
	if tr == nil {
		return usage.StatePending, false
	}
	return tr.state, true
}
