package manager

import (
	"flag"
	"fmt"

	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// Flags are kubox-controller's command-line flags. The configuration file is the place for
// settings; the other flags exist so a Deployment written for agent-sandbox's controller keeps
// working: each has agent-sandbox's name and, when given, overrides the file.
type Flags struct {
	fs         *flag.FlagSet
	configFile string
	version    bool

	clusterDomain    string
	metricsAddr      string
	healthAddr       string
	leaderElect      bool
	leaderElectionNS string
	qps              float64
	burst            int
	sandboxWorkers   int
}

// BindFlags defines the flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	fs.StringVar(&f.configFile, "config", "",
		"Path to a ControllerConfiguration file (apiVersion config.kubox.dev/v1alpha1); without one every setting has its default. See docs/configuration.md.")
	fs.BoolVar(&f.version, "version", false, "Print the version and exit.")
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
	fs.IntVar(&f.sandboxWorkers, "sandbox-concurrent-workers", int(configv1alpha1.DefaultSandboxWorkers),
		"Overrides controllers.sandbox.workers: Sandboxes reconciled at once.")
	return f
}

// Version reports whether --version was given.
func (f *Flags) Version() bool { return f.version }

// Config loads the configuration file, applies the flags given on the command line over it, and
// validates the result. Call it after the FlagSet is parsed.
func (f *Flags) Config() (*configv1alpha1.ControllerConfiguration, error) {
	cfg, err := configv1alpha1.Load(f.configFile)
	if err != nil {
		return nil, err
	}
	f.fs.Visit(func(fl *flag.Flag) { f.apply(fl.Name, cfg) })
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
	case "sandbox-concurrent-workers":
		cfg.Controllers.Sandbox.Workers = ptr.To(int32(f.sandboxWorkers))
	}
}
