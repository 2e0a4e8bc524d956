// Package metrics defines the controller metrics kubox shares with kubernetes-sigs/agent-sandbox:
// same names, types, buckets, label names and label values, so dashboards and alerts written for
// agent-sandbox work unchanged. Everything is registered on controller-runtime's registry, which
// the manager's metrics server exposes next to the controller_runtime_* and workqueue_* families.
//
// Label values follow agent-sandbox, including its sentinels:
//   - launch_type is "cold" or "warm" (the agents.x-k8s.io/launch-type label; anything but "warm"
//     counts as cold). Latency observations without a launch type use "unknown".
//   - sandbox_template is the agents.x-k8s.io/sandbox-template-ref annotation. Without one,
//     agent_sandboxes reports "unknown" and agent_sandbox_creation_latency_ms "__unknown__":
//     agent-sandbox uses the two sentinels and so do we.
//   - ready_condition and expired are "true" or "false" (lower case; a Sandbox without a Ready
//     condition, or with Ready=Unknown, is "false").
//   - owned_by is "SandboxClaim", "SandboxWarmPool" or "None".
//   - created_by is "go-client", "python-client", "controller" or "unknown".
package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubox-dev/kubox/internal/version"
)

// Label values shared with agent-sandbox.
const (
	// LaunchTypeCold: the Sandbox was created for its claim, or not through a claim at all.
	LaunchTypeCold = "cold"
	// LaunchTypeWarm: the Sandbox came from a SandboxWarmPool.
	LaunchTypeWarm = "warm"
	// LaunchTypeUnknown: a latency was observed without knowing the launch type.
	LaunchTypeUnknown = "unknown"

	// OwnedBySandboxClaim: the Sandbox's controller is a SandboxClaim.
	OwnedBySandboxClaim = "SandboxClaim"
	// OwnedBySandboxWarmPool: the Sandbox's controller is a SandboxWarmPool.
	OwnedBySandboxWarmPool = "SandboxWarmPool"
	// OwnedByNone: the Sandbox has no controller from the extensions group.
	OwnedByNone = "None"

	// CreatedByUnknown replaces a missing or unrecognised agents.x-k8s.io/created-by value.
	CreatedByUnknown = "unknown"

	// UnknownTemplate is agent_sandboxes' sandbox_template for a Sandbox without a template.
	UnknownTemplate = "unknown"
	// UnknownLatencyTemplate is agent_sandbox_creation_latency_ms' sandbox_template for a Sandbox
	// without a template.
	UnknownLatencyTemplate = "__unknown__"
)

// creationLatencyBuckets are agent-sandbox's buckets for agent_sandbox_creation_latency_ms, kept
// exactly so histograms from both controllers aggregate: roughly ×2–2.5 steps from 50 ms to 10 s
// (pulling an image and starting a Pod), then coarser steps to 10 min (slow scheduling, a
// cluster autoscaler adding a node).
var creationLatencyBuckets = []float64{
	50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 240000, 300000, 600000,
}

// creationLatency is agent_sandbox_creation_latency_ms.
var creationLatency = prometheus.NewHistogramVec(
	prometheus.HistogramOpts{
		Name: "agent_sandbox_creation_latency_ms",
		Help: "Latency from Sandbox creation to the Sandbox Ready condition in milliseconds. " +
			"For warm launches the Sandbox is created by its SandboxWarmPool, so this measures the " +
			"pool's provisioning time.",
		Buckets: creationLatencyBuckets,
	},
	[]string{"namespace", "launch_type", "sandbox_template"},
)

// ObserveCreationLatency records d, the time from a Sandbox's creation to its first Ready=True, in
// agent_sandbox_creation_latency_ms. An empty launchType is recorded as "unknown", an empty
// template as "__unknown__". A negative d (clock skew between API servers) is dropped.
func ObserveCreationLatency(namespace, launchType, template string, d time.Duration) {
	if d < 0 {
		return
	}
	if launchType == "" {
		launchType = LaunchTypeUnknown
	}
	if template == "" {
		template = UnknownLatencyTemplate
	}
	creationLatency.WithLabelValues(namespace, launchType, template).Observe(float64(d) / float64(time.Millisecond))
}

// newBuildInfo returns agent_sandbox_build_info: a gauge fixed at 1 whose labels describe the build.
func newBuildInfo(info version.Info) prometheus.Collector {
	return BuildInfo("agent_sandbox_build_info", "Build metadata of the controller, exposed as labels with a constant value of 1.", info)
}

// BuildInfo returns a gauge called name fixed at 1 whose labels describe the build, as
// agent-sandbox's components expose it (git_version, git_commit, build_date, go_version,
// compiler, platform).
func BuildInfo(name, help string, info version.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: name,
		Help: help,
		ConstLabels: prometheus.Labels{
			"git_version": info.GitVersion,
			"git_commit":  info.GitCommit,
			"build_date":  info.BuildDate,
			"go_version":  info.GoVersion,
			"compiler":    info.Compiler,
			"platform":    info.Platform,
		},
	})
	g.Set(1)
	return g
}

var (
	registerOnce sync.Once
	registerErr  error
)

// Register registers every metric of this package on controller-runtime's registry, with the
// Sandbox informer of informers (the manager's cache) as the source of agent_sandboxes. Only the
// first call registers; later calls return the first call's result and ignore their arguments.
func Register(ctx context.Context, informers cache.Informers, log logr.Logger) error {
	registerOnce.Do(func() {
		registerErr = register(ctx, crmetrics.Registry, informers, log)
	})
	return registerErr
}

func register(ctx context.Context, reg prometheus.Registerer, informers cache.Informers, log logr.Logger) error {
	sandboxes := NewSandboxCollector(log)
	if err := sandboxes.WatchSandboxes(ctx, informers); err != nil {
		return err
	}
	var errs []error
	for _, c := range []prometheus.Collector{
		creationLatency,
		newBuildInfo(version.Get()),
		sandboxes,
	} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
