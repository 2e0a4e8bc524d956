package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// Flags are kubox-controller's command-line flags. The configuration file is the place for
// settings; the other flags exist so a Deployment written for agent-sandbox's controller keeps
// working: each has agent-sandbox's name and, when given, overrides the file.
type Flags struct {
	fs         *pflag.FlagSet
	configFile string

	clusterDomain    string
	metricsAddr      string
	healthAddr       string
	leaderElect      bool
	leaderElectionNS string
	qps              float64
	burst            int
	apiConnections   int
	separateWatch    bool
	sandboxWorkers   int
	extensions       bool
	templateWorkers  int
	poolWorkers      int
	claimWorkers     int
	poolBatch        int
	poolGrace        time.Duration
	poolRecheck      time.Duration
	poolDelay        time.Duration
	poolRefillRate   float64
	noClaimEvents    bool
	noClaimAnnotate  bool
	pprofAddr        string
}

// BindFlags defines the flags on fs.
func BindFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	fs.StringVar(&f.configFile, "config", "",
		"Path to a ControllerConfiguration file (apiVersion config.kubox.dev/v1alpha1); without one every setting has its default. See docs/configuration.md.")
	fs.StringVar(&f.clusterDomain, "cluster-domain", configv1alpha1.DefaultClusterDomain,
		"Overrides clusterDomain: the cluster's DNS domain, used in status.serviceFQDN.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", configv1alpha1.DefaultMetricsAddress,
		`Overrides metrics.bindAddress: where Prometheus metrics are served ("0" turns them off).`)
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", configv1alpha1.DefaultHealthAddress,
		`Overrides health.bindAddress: where /healthz and /readyz are served ("0" turns them off).`)
	fs.BoolVar(&f.leaderElect, "leader-elect", true,
		"Overrides leaderElection.enabled: elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "",
		"Overrides leaderElection.namespace: the namespace of the election's Lease (default: the controller's own).")
	fs.Float64Var(&f.qps, "kube-api-qps", float64(configv1alpha1.DefaultQPS),
		"Overrides clientConnection.qps: requests per second to the API server; negative turns client-side throttling off.")
	fs.IntVar(&f.burst, "kube-api-burst", int(configv1alpha1.DefaultBurst),
		"Overrides clientConnection.burst: requests allowed above qps for a short time.")
	fs.IntVar(&f.apiConnections, "api-connections", int(configv1alpha1.DefaultAPIConnections),
		"Overrides clientConnection.apiConnections: HTTP/2 connections to the API server that requests are spread over, round-robin.")
	fs.BoolVar(&f.separateWatch, "separate-watch-connection", false,
		"Overrides clientConnection.separateWatchConnection: give watches an HTTP/2 connection of their own.")
	fs.IntVar(&f.sandboxWorkers, "sandbox-concurrent-workers", int(configv1alpha1.DefaultSandboxWorkers),
		"Overrides controllers.sandbox.workers: Sandboxes reconciled at once.")
	// Not a configuration setting: a debugging switch for one run, off unless given.
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "",
		`Where to serve net/http/pprof's /debug/pprof/ (e.g. "127.0.0.1:6060"); empty, the default, serves nothing. For profiling only: keep it on loopback.`)
	bindExtensionFlags(fs, f)
	return f
}

// PprofBindAddress is --pprof-bind-address: where the manager serves pprof, "" for nowhere.
func (f *Flags) PprofBindAddress() string { return f.pprofAddr }

func bindExtensionFlags(fs *pflag.FlagSet, f *Flags) {
	fs.BoolVar(&f.extensions, "extensions", true,
		"Overrides controllers.extensions: run the SandboxTemplate, SandboxWarmPool and SandboxClaim controllers.")
	fs.IntVar(&f.templateWorkers, "sandbox-template-concurrent-workers", int(configv1alpha1.DefaultTemplateWorkers),
		"Overrides controllers.sandboxTemplate.workers.")
	fs.IntVar(&f.poolWorkers, "sandbox-warm-pool-concurrent-workers", int(configv1alpha1.DefaultWarmPoolWorkers),
		"Overrides controllers.sandboxWarmPool.workers.")
	fs.IntVar(&f.claimWorkers, "sandbox-claim-concurrent-workers", int(configv1alpha1.DefaultClaimWorkers),
		"Overrides controllers.sandboxClaim.workers.")
	fs.IntVar(&f.poolBatch, "sandbox-warm-pool-max-batch-size", int(configv1alpha1.DefaultWarmPoolMaxBatchSize),
		"Overrides controllers.sandboxWarmPool.maxBatchSize: the most members one pass of a pool creates.")
	fs.DurationVar(&f.poolGrace, "sandbox-warm-pool-readiness-grace-period", configv1alpha1.DefaultWarmPoolReadinessGracePeriod,
		"Overrides controllers.sandboxWarmPool.readinessGracePeriod: how long a member may stay not Ready before it is replaced.")
	fs.DurationVar(&f.poolRecheck, "sandbox-warm-pool-unschedulable-recheck-interval", configv1alpha1.DefaultWarmPoolUnschedulableRecheckInterval,
		"Overrides controllers.sandboxWarmPool.unschedulableRecheckInterval.")
	fs.DurationVar(&f.poolDelay, "sandbox-warm-pool-replenish-delay", configv1alpha1.DefaultWarmPoolReplenishDelay,
		"Overrides controllers.sandboxWarmPool.replenishDelay: how long a pool holds its refill after a claim takes a member (0: refill at once).")
	fs.Float64Var(&f.poolRefillRate, "sandbox-warm-pool-max-refill-rate", float64(configv1alpha1.DefaultWarmPoolMaxRefillRate),
		"Overrides controllers.sandboxWarmPool.maxRefillRate: members per second each pool creates at most (0: unpaced).")
	fs.BoolVar(&f.noClaimEvents, "disable-claim-events", false,
		"Overrides controllers.sandboxClaim.events (as its negation): record no Events about claims, one API write each.")
	fs.BoolVar(&f.noClaimAnnotate, "disable-claim-observability-annotations", false,
		"Overrides controllers.sandboxClaim.observabilityAnnotations (as its negation): write no sandbox-name and controller-first-observed-at annotations on bound claims, one API write each.")
	bindInertFlags(fs)
}

// Config loads the configuration file, applies the flags given on the command line over it, and
// validates the result. Call it after the FlagSet is parsed.
func (f *Flags) Config() (*configv1alpha1.ControllerConfiguration, error) {
	cfg, err := configv1alpha1.Load(f.configFile)
	if err != nil {
		return nil, err
	}
	f.fs.Visit(func(fl *pflag.Flag) { f.apply(fl.Name, cfg) })
	if errs := configv1alpha1.Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("the flags make the controller configuration invalid: %w", errs.ToAggregate())
	}
	return cfg, nil
}

func (f *Flags) apply(name string, cfg *configv1alpha1.ControllerConfiguration) {
	switch name {
	case "cluster-domain":
		cfg.ClusterDomain = f.clusterDomain
	case "metrics-bind-address":
		cfg.Metrics.BindAddress = f.metricsAddr
	case "health-probe-bind-address":
		cfg.Health.BindAddress = f.healthAddr
	case "leader-elect":
		cfg.LeaderElection.Enabled = ptr.To(f.leaderElect)
	case "leader-election-namespace":
		cfg.LeaderElection.Namespace = f.leaderElectionNS
	case "kube-api-qps":
		cfg.ClientConnection.QPS = ptr.To(float32(f.qps))
	case "kube-api-burst":
		cfg.ClientConnection.Burst = ptr.To(int32(f.burst))
	case "api-connections":
		cfg.ClientConnection.APIConnections = ptr.To(int32(f.apiConnections))
	case "separate-watch-connection":
		cfg.ClientConnection.SeparateWatchConnection = ptr.To(f.separateWatch)
	case "sandbox-concurrent-workers":
		cfg.Controllers.Sandbox.Workers = ptr.To(int32(f.sandboxWorkers))
	default:
		f.applyExtension(name, &cfg.Controllers)
	}
}

func (f *Flags) applyExtension(name string, c *configv1alpha1.Controllers) {
	switch name {
	case "extensions":
		c.Extensions = ptr.To(f.extensions)
	case "sandbox-template-concurrent-workers":
		c.SandboxTemplate.Workers = ptr.To(int32(f.templateWorkers))
	case "sandbox-warm-pool-concurrent-workers":
		c.SandboxWarmPool.Workers = ptr.To(int32(f.poolWorkers))
	case "sandbox-claim-concurrent-workers":
		c.SandboxClaim.Workers = ptr.To(int32(f.claimWorkers))
	case "sandbox-warm-pool-max-batch-size":
		c.SandboxWarmPool.MaxBatchSize = ptr.To(int32(f.poolBatch))
	case "sandbox-warm-pool-readiness-grace-period":
		c.SandboxWarmPool.ReadinessGracePeriod = &metav1.Duration{Duration: f.poolGrace}
	case "sandbox-warm-pool-unschedulable-recheck-interval":
		c.SandboxWarmPool.UnschedulableRecheckInterval = &metav1.Duration{Duration: f.poolRecheck}
	case "sandbox-warm-pool-replenish-delay":
		c.SandboxWarmPool.ReplenishDelay = &metav1.Duration{Duration: f.poolDelay}
	case "sandbox-warm-pool-max-refill-rate":
		c.SandboxWarmPool.MaxRefillRate = ptr.To(float32(f.poolRefillRate))
	case "disable-claim-events":
		c.SandboxClaim.Events = ptr.To(!f.noClaimEvents)
	case "disable-claim-observability-annotations":
		c.SandboxClaim.ObservabilityAnnotations = ptr.To(!f.noClaimAnnotate)
	}
}
