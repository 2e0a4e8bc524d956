package v1alpha1

import "k8s.io/utils/ptr"

// Defaults of ControllerConfiguration.
const (
	DefaultClusterDomain            = "cluster.local"
	DefaultQPS              float32 = -1
	DefaultBurst            int32   = 100
	DefaultSandboxWorkers   int32   = 100
	DefaultMetricsAddress           = ":8080"
	DefaultHealthAddress            = ":8081"
	DefaultLeaderElectionID         = "kubox-controller.kubox.dev"
)

// SetDefaults fills every unset field of c with its default.
func SetDefaults(c *ControllerConfiguration) {
	c.APIVersion = GroupVersion.String()
	c.Kind = "ControllerConfiguration"
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.ClientConnection.QPS == nil {
		c.ClientConnection.QPS = ptr.To(DefaultQPS)
	}
	if c.ClientConnection.Burst == nil {
		c.ClientConnection.Burst = ptr.To(DefaultBurst)
	}
	if c.Controllers.Sandbox.Workers == nil {
		c.Controllers.Sandbox.Workers = ptr.To(DefaultSandboxWorkers)
	}
	if c.Metrics.BindAddress == "" {
		c.Metrics.BindAddress = DefaultMetricsAddress
	}
	if c.Health.BindAddress == "" {
		c.Health.BindAddress = DefaultHealthAddress
	}
	if c.LeaderElection.Enabled == nil {
		c.LeaderElection.Enabled = ptr.To(true)
	}
	if c.LeaderElection.ID == "" {
		c.LeaderElection.ID = DefaultLeaderElectionID
	}
}
