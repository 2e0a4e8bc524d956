package usage

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/provenance"
	"github.com/kubox-dev/kubox/internal/usage"
)

// Config configures a Tracker.
type Config struct {
	// PrincipalLabel is the label whose value is the principal (usage.principalLabel): the
	// Sandbox's, else its Pod template's; empty: every sandbox's principal is "unknown".
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
	// measured gives a deleted sandbox's measured figures (a KubeletSource); nil: none.
	measured interface {
		Take(types.UID) *usage.Measured
	}

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

// Register registers the Tracker's metrics with reg. A metric some earlier Tracker registered
// there already (a manager set up again in the same process) is taken over: this Tracker adds to
// its series.
func (t *Tracker) Register(reg prometheus.Registerer) error {
	for _, c := range []**prometheus.CounterVec{&t.running, &t.suspended, &t.cpu, &t.mem, &t.wakes} {
		err := reg.Register(*c)
		var are prometheus.AlreadyRegisteredError
		switch {
		case err == nil:
		case errors.As(err, &are):
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return err
			}
			*c = existing
		default:
			return err
		}
	}
	return nil
}

// MeasureWith makes Delete take each record's measured figures from src. Call it before the
// manager starts.
func (t *Tracker) MeasureWith(src interface {
	Take(types.UID) *usage.Measured
}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.measured = src
}

// Observe feeds the sandbox's current state, as seen at now. The time since the last
// observation counts under the sandbox's identity as it was; then the identity is read again
// (a warm-pool member taken by a claim gains the claim and the claim's principal).
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
	t.identify(tr, sb)
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
	if t.measured != nil {
		rec.Measured = t.measured.Take(sb.UID)
	}
	return rec, true
}

func (t *Tracker) start(sb *sandboxv1beta1.Sandbox, now time.Time) *tracked {
	rec := usage.Record{Schema: usage.SchemaVersion, Namespace: sb.Namespace, Name: sb.Name, UID: string(sb.UID), Start: now}
	if !sb.CreationTimestamp.IsZero() && sb.CreationTimestamp.Time.Before(now) {
		rec.Start = sb.CreationTimestamp.Time
	}
	tr := &tracked{meter: usage.NewMeter(usage.RequestsOf(&sb.Spec.PodTemplate.Spec)), record: rec}
	t.identify(tr, sb)
	return tr
}

// identify updates the record's claim, pool, template and principal from sb, keeping what an
// earlier observation found that sb no longer says (a claimed member has lost its pool), and the
// metric labels with them.
//
// The claim, pool and template names are believed only from a Sandbox whose controller
// reference is a SandboxClaim or SandboxWarmPool of extensions.agents.x-k8s.io: admission lets
// only kubox-controller write such a reference (config/admission/sandbox_provenance.yaml), and
// the controllers write the template annotation of the Sandboxes they make. On any other Sandbox
// the annotation and references are the tenant's own writing and name nothing. The principal is
// the tenant's by design (the label its claim sets): the Sandbox's label, else its Pod template's.
func (t *Tracker) identify(tr *tracked, sb *sandboxv1beta1.Sandbox) {
	r := &tr.record
	if gk, ok := provenance.ControllerKind(sb); ok && (gk == provenance.SandboxClaim || gk == provenance.SandboxWarmPool) {
		ref := metav1.GetControllerOf(sb)
		if gk == provenance.SandboxClaim {
			r.Claim = ref.Name
		} else {
			r.Pool = ref.Name
		}
		if tpl := sb.Annotations[sandboxv1beta1.SandboxTemplateRefAnnotation]; tpl != "" {
			r.Template = tpl
		}
	}
	if key := t.cfg.PrincipalLabel; key != "" {
		if p := sb.Labels[key]; p != "" {
			r.Principal = p
		} else if p := sb.Spec.PodTemplate.Metadata.Labels[key]; p != "" {
			r.Principal = p
		}
	}
	tr.labels = []string{sb.Namespace, t.templates.Value(r.Template), t.principals.Value(r.Principal)}
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

// Figures returns what the sandbox with uid counted up to now; false if the Tracker tracks
// none (the Sandbox controller's status.usage).
func (t *Tracker) Figures(uid types.UID, now time.Time) (usage.Figures, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.tracked[uid]
	if tr == nil {
		return usage.Figures{}, false
	}
	return tr.meter.Figures(now), true
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
