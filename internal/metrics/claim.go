package metrics

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Claim metrics: agent-sandbox's three claim startup histograms and its claim creation counter,
// with the same names, buckets and labels, plus kubox_claim_phase_seconds, which splits a claim's
// time into the phases below. The histograms are observed once per claim, when it first becomes
// Ready; the counter once per sandbox a claim creates or binds.

// Phases of kubox_claim_phase_seconds. They follow each other, so a claim's observations add up
// to the time from the controller seeing it to its Ready status being written.
const (
	// ClaimPhaseQueued is the time from the controller's informer delivering the new claim to the
	// first reconcile pass for it: workqueue wait, mostly.
	ClaimPhaseQueued = "queued"
	// ClaimPhaseBound is the time from the first pass to the claim having a sandbox: a warm
	// member bound, or a cold sandbox created.
	ClaimPhaseBound = "bound"
	// ClaimPhaseSandboxReady is the time from the claim having a sandbox to the controller seeing
	// that sandbox Ready: zero for a ready warm member, the Pod's start for a cold sandbox.
	ClaimPhaseSandboxReady = "sandbox_ready"
	// ClaimPhaseStatusWritten is the time from seeing the sandbox Ready to the claim's Ready
	// status being written.
	ClaimPhaseStatusWritten = "status_written"
)

// Values of agent_sandbox_claim_creation_total's pod_condition label.
const (
	// PodConditionReady: the sandbox was Ready when the claim created or bound it.
	PodConditionReady = "ready"
	// PodConditionNotReady: it was not.
	PodConditionNotReady = "not_ready"
)

// claimLatencyBuckets are agent-sandbox's buckets for the claim startup histograms, in
// milliseconds: fine steps up to 2.5 s, where warm and most cold claims land, then coarse ones
// up to 4 min.
var claimLatencyBuckets = []float64{100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000, 10000, 30000, 60000, 120000, 240000}

// claimPhaseBuckets are kubox_claim_phase_seconds' buckets: from 1 ms, since a warm claim's
// phases take milliseconds, to 5 min, for a cold sandbox on a slow node.
var claimPhaseBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
}

func newClaimLatency(name, help string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: claimLatencyBuckets},
		[]string{"launch_type", "sandbox_template"})
}

var (
	// claimStartupLatency is agent_sandbox_claim_startup_latency_ms.
	claimStartupLatency = newClaimLatency("agent_sandbox_claim_startup_latency_ms",
		"Time in milliseconds from an admission webhook stamping a SandboxClaim "+
			"(annotation agents.x-k8s.io/webhook-first-observed-at) to the claim first being Ready. "+
			"Claims without that annotation are not observed.")
	// claimControllerStartupLatency is agent_sandbox_claim_controller_startup_latency_ms.
	claimControllerStartupLatency = newClaimLatency("agent_sandbox_claim_controller_startup_latency_ms",
		"Time in milliseconds from the controller first seeing a SandboxClaim to the claim first being Ready.")
	// clientClaimStartupLatency is agent_sandbox_client_claim_startup_latency_ms.
	clientClaimStartupLatency = newClaimLatency("agent_sandbox_client_claim_startup_latency_ms",
		"Time in milliseconds from a client SDK asking for a SandboxClaim "+
			"(annotation agents.x-k8s.io/client-first-requested-at) to the claim first being Ready. "+
			"Claims without that annotation are not observed; the client's clock may differ from the controller's.")

	// claimCreationTotal is agent_sandbox_claim_creation_total.
	claimCreationTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_sandbox_claim_creation_total",
		Help: "Number of Sandboxes created (cold) or bound from a warm pool (warm) for SandboxClaims.",
	}, []string{"namespace", "sandbox_template", "launch_type", "warmpool_name", "pod_condition", "created_by"})

	// claimPhaseSeconds is kubox_claim_phase_seconds.
	claimPhaseSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "kubox_claim_phase_seconds",
		Help: "Time in seconds a SandboxClaim spent in each phase on its way to Ready: queued (informer to first " +
			"reconcile), bound (to having a sandbox), sandbox_ready (to the sandbox being Ready), status_written " +
			"(to the claim's Ready status being written).",
		Buckets: claimPhaseBuckets,
	}, []string{"phase"})
)

// claimLabels returns the launch_type and sandbox_template values of the claim latency metrics,
// with agent-sandbox's sentinels for missing values.
func claimLabels(launchType, template string) (string, string) {
	if launchType == "" {
		launchType = LaunchTypeUnknown
	}
	if template == "" {
		template = UnknownLatencyTemplate
	}
	return launchType, template
}

func observeMillis(h *prometheus.HistogramVec, launchType, template string, d time.Duration) {
	if d < 0 {
		// Clocks disagree (the annotation came from another machine): no meaningful sample.
		return
	}
	lt, tpl := claimLabels(launchType, template)
	h.WithLabelValues(lt, tpl).Observe(float64(d) / float64(time.Millisecond))
}

// ObserveClaimStartupLatency records d, from the webhook's stamp to first Ready, in
// agent_sandbox_claim_startup_latency_ms. launchType is the sandbox's launch-type label and
// template its sandbox-template-ref annotation; empty values get agent-sandbox's sentinels
// ("unknown", "__unknown__"). A negative d is dropped.
func ObserveClaimStartupLatency(launchType, template string, d time.Duration) {
	observeMillis(claimStartupLatency, launchType, template, d)
}

// ObserveClaimControllerStartupLatency records d, from the controller first seeing the claim to
// first Ready, in agent_sandbox_claim_controller_startup_latency_ms, as ObserveClaimStartupLatency.
func ObserveClaimControllerStartupLatency(launchType, template string, d time.Duration) {
	observeMillis(claimControllerStartupLatency, launchType, template, d)
}

// ObserveClientClaimStartupLatency records d, from the client's request to first Ready, in
// agent_sandbox_client_claim_startup_latency_ms, as ObserveClaimStartupLatency.
func ObserveClientClaimStartupLatency(launchType, template string, d time.Duration) {
	observeMillis(clientClaimStartupLatency, launchType, template, d)
}

// ClaimCreation describes a sandbox a claim created or bound, for agent_sandbox_claim_creation_total.
type ClaimCreation struct {
	// Namespace is the claim's namespace.
	Namespace string
	// Template is the sandbox's template; empty is recorded as "__unknown__".
	Template string
	// LaunchType is "warm" or "cold".
	LaunchType string
	// WarmPool is the pool the sandbox was bound from (warm), or the pool the claim names (cold;
	// empty for a claim that names a template).
	WarmPool string
	// Ready is whether the sandbox was Ready when created or bound.
	Ready bool
	// CreatedBy is the claim's agents.x-k8s.io/created-by label; values outside agent-sandbox's
	// allow-list are recorded as "unknown".
	CreatedBy string
}

// CountClaimCreation adds one to agent_sandbox_claim_creation_total.
func CountClaimCreation(c ClaimCreation) {
	cond := PodConditionNotReady
	if c.Ready {
		cond = PodConditionReady
	}
	lt, tpl := claimLabels(c.LaunchType, c.Template)
	claimCreationTotal.WithLabelValues(c.Namespace, tpl, lt, c.WarmPool, cond, normalizeCreatedBy(c.CreatedBy)).Inc()
}

// ObserveClaimPhase records d in kubox_claim_phase_seconds for phase, one of the ClaimPhase
// constants. A negative d is dropped.
func ObserveClaimPhase(phase string, d time.Duration) {
	if d < 0 {
		return
	}
	claimPhaseSeconds.WithLabelValues(phase).Observe(d.Seconds())
}

var claimRegistration registration

// RegisterClaimMetrics registers the claim metrics on controller-runtime's registry. Only the
// first call registers; later calls return its result.
func RegisterClaimMetrics() error { return claimRegistration.do(registerClaim) }

func registerClaim(reg prometheus.Registerer) error {
	return registerAll(reg, claimStartupLatency, claimControllerStartupLatency, clientClaimStartupLatency, claimCreationTotal,
		claimPhaseSeconds)
}

// registration registers a set of metrics on controller-runtime's registry once.
type registration struct {
	once sync.Once
	err  error
}

func (r *registration) do(register func(prometheus.Registerer) error) error {
	r.once.Do(func() { r.err = register(crmetrics.Registry) })
	return r.err
}

// registerAll registers every collector, and returns every error.
func registerAll(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
