// Package metrics defines kubox-router's Prometheus metrics, with the names and labels of
// agent-sandbox's Go router so its dashboards work unchanged. Each Router has a private
// registry (several routers in one test process do not collide) that also carries the Go and
// process collectors.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	kuboxmetrics "github.com/kubox-dev/kubox/internal/metrics"
	"github.com/kubox-dev/kubox/internal/version"
)

// Reasons of sandbox_router_upstream_errors_total.
const (
	// ReasonDial: no connection to the sandbox's pod (refused, unreachable), after retries.
	ReasonDial = "dial"
	// ReasonTimeout: the sandbox did not answer in time (--proxy-timeout or X-Sandbox-Timeout).
	ReasonTimeout = "timeout"
	// ReasonBlockedIP: the sandbox reports a pod IP the router refuses to dial (loopback, ...).
	ReasonBlockedIP = "blocked_ip"
	// ReasonStalePodIP: the sandbox reports a pod IP that none of its live Pods holds (the Pod
	// was deleted or replaced and the status has not caught up); the router does not dial it.
	ReasonStalePodIP = "stale_pod_ip"
	// ReasonHeaderTooLarge: the sandbox's response headers passed --max-response-header-bytes.
	ReasonHeaderTooLarge = "header_too_large"
	// ReasonOther: the connection failed after it was made (reset, protocol error).
	ReasonOther = "other"
)

// Decisions of sandbox_router_authz_decisions_total.
const (
	DecisionAllow           = "allow"
	DecisionDeny            = "deny"
	DecisionUnauthenticated = "unauthenticated"
	DecisionError           = "error"
)

// Reasons of sandbox_router_token_rejections_total besides authn's malformed reasons
// (too_long, charset, jwt).
const (
	// RejectionClaimToken: a kbx1. token whose signature or expiry is wrong.
	RejectionClaimToken = "claim_token"
)

// Results of kubox_router_activity_writes_total.
const (
	ActivityWriteSuccess = "success"
	ActivityWriteError   = "error"
)

// Results of kubox_router_wakes_total, one per request that found its sandbox suspended.
const (
	// WakeWoken: the sandbox became Ready and the request went on to it.
	WakeWoken = "woken"
	// WakeTimeout: the sandbox was not Ready within --wake-timeout (504).
	WakeTimeout = "timeout"
	// WakeFailed: resuming failed, or the sandbox reported a failure while starting (503).
	WakeFailed = "failed"
	// WakeForbidden: the caller may not resume the sandbox (403).
	WakeForbidden = "forbidden"
)

// Metrics are one router's metrics.
type Metrics struct {
	Registry           *prometheus.Registry
	Requests           *prometheus.CounterVec
	Duration           *prometheus.HistogramVec
	Inflight           prometheus.Gauge
	UpstreamErrors     *prometheus.CounterVec
	UpstreamRetries    prometheus.Counter
	CacheInvalidations prometheus.Counter
	AuthzDecisions     *prometheus.CounterVec
	TokenRejections    *prometheus.CounterVec
	// TokenReviewsLimited counts answers 429 for lack of TokenReview budget, by scope.
	TokenReviewsLimited *prometheus.CounterVec
	// ActivityWrites counts the router's writes of a sandbox's kubox.dev/last-activity, by result.
	ActivityWrites *prometheus.CounterVec
	// Wakes counts the requests that found their sandbox suspended, by outcome.
	Wakes *prometheus.CounterVec
	// WakeDuration is the time from such a request's arrival to its sandbox being Ready.
	WakeDuration prometheus.Histogram
}

// New registers a fresh set of metrics on a new registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbox_router_requests_total",
			Help: "Requests the router answered, by method, status code and the sandbox's namespace (empty when none was resolved).",
		}, []string{"method", "code", "sandbox_namespace"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sandbox_router_request_duration_seconds",
			Help:    "Time from receiving a request to the end of its response (whole streams and upgraded connections included).",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10), // 5 ms to ~22 min
		}, []string{"method", "sandbox_namespace"}),
		Inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandbox_router_inflight_requests",
			Help: "Requests being served, streams and upgraded connections included.",
		}),
		UpstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbox_router_upstream_errors_total",
			Help: "Requests that failed between the router and the sandbox, by reason (dial, timeout, blocked_ip, header_too_large, other).",
		}, []string{"sandbox_namespace", "reason"}),
		UpstreamRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandbox_router_upstream_retries_total",
			Help: "Connection attempts to a sandbox repeated after a dial failure.",
		}),
		CacheInvalidations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandbox_router_cache_invalidations_total",
			Help: "Times a sandbox the router knew lost its destination (deleted, or its pod IP changed or went away).",
		}),
		AuthzDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbox_router_authz_decisions_total",
			Help: "Authentication and authorization outcomes (allow, deny, unauthenticated, error).",
		}, []string{"decision"}),
		TokenRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbox_router_token_rejections_total",
			Help: "Bearer tokens refused without asking the Kubernetes API, by reason (too_long, charset, jwt, claim_token).",
		}, []string{"reason"}),
		TokenReviewsLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandbox_router_tokenreviews_limited_total",
			Help: "Requests answered 429 because reviewing their unknown bearer token would exceed the TokenReview budget, by scope (client, router).",
		}, []string{"scope"}),
		ActivityWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubox_router_activity_writes_total",
			Help: "Writes of the kubox.dev/last-activity annotation of sandboxes with an idle policy, by result (success, error).",
		}, []string{"result"}),
		Wakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubox_router_wakes_total",
			Help: "Requests that found their sandbox suspended with wake OnRequest, by outcome (woken, timeout, failed, forbidden).",
		}, []string{"result"}),
		WakeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubox_router_wake_duration_seconds",
			Help:    "Time from the arrival of a request for a suspended sandbox to the sandbox being Ready.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 10), // 250 ms to ~2 min
		}),
	}
	m.Registry.MustRegister(m.Requests, m.Duration, m.Inflight, m.UpstreamErrors, m.UpstreamRetries,
		m.CacheInvalidations, m.AuthzDecisions, m.TokenRejections, m.TokenReviewsLimited, m.ActivityWrites, m.Wakes, m.WakeDuration, buildInfo(version.Get()),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// buildInfo is sandbox_router_build_info: a gauge fixed at 1 whose labels describe the build.
func buildInfo(info version.Info) prometheus.Collector {
	return kuboxmetrics.BuildInfo("sandbox_router_build_info", "Build metadata of the router, exposed as labels with a constant value of 1.", info)
}
