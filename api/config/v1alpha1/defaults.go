package v1alpha1

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/api/contract"
)

// Defaults of ControllerConfiguration.
const (
	DefaultClusterDomain            = "cluster.local"
	DefaultQPS              float32 = -1
	DefaultBurst            int32   = 100
	DefaultAPIConnections   int32   = 1
	DefaultSandboxWorkers   int32   = 100
	DefaultMetricsAddress           = ":8080"
	DefaultHealthAddress            = ":8081"
	DefaultLeaderElectionID         = "kubox-controller.kubox.dev"

	DefaultTemplateWorkers                      int32   = 1
	DefaultWarmPoolWorkers                      int32   = 4
	DefaultClaimWorkers                         int32   = 50
	DefaultWarmPoolMaxBatchSize                 int32   = 300
	DefaultWarmPoolReadinessGracePeriod                 = 5 * time.Minute
	DefaultWarmPoolUnschedulableRecheckInterval         = time.Minute
	DefaultWarmPoolMaxRefillRate                float32 = 0
	DefaultAllowedLabelDomain                           = "sandbox.users.io"
	DefaultAllowedAnnotationDomain                      = "sandbox.users.io"
	DefaultRouterNamespace                              = contract.DefaultRouterNamespace
	DefaultClusterDNSNamespace                          = "kube-system"
	DefaultAgentPort                            int32   = contract.DefaultAgentPort
	DefaultAgentCompatibilityPort               int32   = contract.DefaultAgentCompatibilityPort
	DefaultMemoryLimitRatio                     float32 = 0.9
	DefaultNodeAPIPort                          int32   = contract.DefaultNodeAPIPort
	DefaultUsageMaxLabelValues                  int32   = 100
)

// DefaultUsageSummaryInterval is the least time between two writes of a running sandbox's
// status.usage. Each write is one API write per sandbox; at 5 minutes a sandbox running an hour
// costs 12, next to the handful its lifecycle costs, and a dashboard polling status is at most
// 5 minutes behind (the metrics are current).
const DefaultUsageSummaryInterval = 5 * time.Minute

// DefaultUsageKubeletInterval is the time between two reads of each kubelet's resource metrics.
const DefaultUsageKubeletInterval = 30 * time.Second

// DefaultWarmPoolReplenishDelay is how long a pool holds its refill after a claim takes a member.
// agent-sandbox's default is 0 (refill at once). kubox holds briefly because a burst of claims
// otherwise meets the pool re-creating each member as it goes, every create bringing a Pod, its
// scheduling and several status writes that the API server serves in between the claims' own
// writes. 200ms is twice the mean gap between binds in the claim benchmark's 300-claim burst on a
// busy 2-core machine (9.4 claims/s at best), so the hold lasts through a burst and the refill
// goes out as one batch after it, yet it is short next to a Pod's start, so a pool the burst
// emptied is back about as soon as without the hold; and a hold never exceeds 5 delays (1s).
const DefaultWarmPoolReplenishDelay = 200 * time.Millisecond

// DefaultWarmPoolStatusBatchPeriod is how long a pool's counting status changes wait to be
// written together. At a claim a second on a pool whose refill starts within a second (kwok, a
// cached image), the take, the new member and its Ready are over within one period and the pool's
// status comes back to what is written: no write at all, where writing each change costs about
// 3.4 per claim. A second is below what a waiting client notices in a count, and the changes it
// acts on (the pool Ready again, errors, a new generation) do not wait.
const DefaultWarmPoolStatusBatchPeriod = time.Second

// DefaultRouterPodLabels and DefaultClusterDNSPodLabels select the router's and the cluster DNS's
// pods by default.
func DefaultRouterPodLabels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "kubox-router"}
}

// DefaultClusterDNSPodLabels selects CoreDNS and kube-dns pods.
func DefaultClusterDNSPodLabels() map[string]string { return map[string]string{"k8s-app": "kube-dns"} }

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
	if c.ClientConnection.APIConnections == nil {
		c.ClientConnection.APIConnections = ptr.To(DefaultAPIConnections)
	}
	if c.ClientConnection.SeparateWatchConnection == nil {
		c.ClientConnection.SeparateWatchConnection = ptr.To(false)
	}
	if c.Controllers.Sandbox.Workers == nil {
		c.Controllers.Sandbox.Workers = ptr.To(DefaultSandboxWorkers)
	}
	if c.Controllers.Sandbox.Memory.NodeAPIPort == nil {
		c.Controllers.Sandbox.Memory.NodeAPIPort = ptr.To[int32](DefaultNodeAPIPort)
	}
	if c.Controllers.Sandbox.Events == nil {
		c.Controllers.Sandbox.Events = ptr.To(true)
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
	if c.MemoryLimitRatio == nil {
		c.MemoryLimitRatio = ptr.To(DefaultMemoryLimitRatio)
	}
	setExtensionDefaults(&c.Controllers)
	setNetworkPolicyDefaults(&c.NetworkPolicy)
	setAgentDefaults(&c.Agent)
	setUsageDefaults(&c.Usage)
}

func setUsageDefaults(u *UsageSettings) {
	if u.Enabled == nil {
		u.Enabled = ptr.To(false)
	}
	if u.MaxLabelValues == nil {
		u.MaxLabelValues = ptr.To(DefaultUsageMaxLabelValues)
	}
	if u.SummaryInterval == nil {
		u.SummaryInterval = &metav1.Duration{Duration: DefaultUsageSummaryInterval}
	}
	if u.Sinks.Stdout == nil {
		u.Sinks.Stdout = ptr.To(u.Sinks.S3 == nil)
	}
	if u.Kubelet.Enabled == nil {
		u.Kubelet.Enabled = ptr.To(true)
	}
	if u.Kubelet.Interval == nil {
		u.Kubelet.Interval = &metav1.Duration{Duration: DefaultUsageKubeletInterval}
	}
}

func setAgentDefaults(a *AgentSettings) {
	if a.ImagePullPolicy == "" {
		a.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if a.Port == nil {
		a.Port = ptr.To(DefaultAgentPort)
	}
	if a.CompatibilityPort == nil {
		a.CompatibilityPort = ptr.To(DefaultAgentCompatibilityPort)
	}
}

func setExtensionDefaults(c *Controllers) {
	if c.Extensions == nil {
		c.Extensions = ptr.To(true)
	}
	if c.SandboxTemplate.Workers == nil {
		c.SandboxTemplate.Workers = ptr.To(DefaultTemplateWorkers)
	}
	wp := &c.SandboxWarmPool
	if wp.Workers == nil {
		wp.Workers = ptr.To(DefaultWarmPoolWorkers)
	}
	if wp.MaxBatchSize == nil {
		wp.MaxBatchSize = ptr.To(DefaultWarmPoolMaxBatchSize)
	}
	if wp.ReadinessGracePeriod == nil {
		wp.ReadinessGracePeriod = &metav1.Duration{Duration: DefaultWarmPoolReadinessGracePeriod}
	}
	if wp.UnschedulableRecheckInterval == nil {
		wp.UnschedulableRecheckInterval = &metav1.Duration{Duration: DefaultWarmPoolUnschedulableRecheckInterval}
	}
	if wp.ReplenishDelay == nil {
		wp.ReplenishDelay = &metav1.Duration{Duration: DefaultWarmPoolReplenishDelay}
	}
	if wp.StatusBatchPeriod == nil {
		wp.StatusBatchPeriod = &metav1.Duration{Duration: DefaultWarmPoolStatusBatchPeriod}
	}
	if wp.MaxRefillRate == nil {
		wp.MaxRefillRate = ptr.To(DefaultWarmPoolMaxRefillRate)
	}
	if c.SandboxClaim.Workers == nil {
		c.SandboxClaim.Workers = ptr.To(DefaultClaimWorkers)
	}
	if c.SandboxClaim.Events == nil {
		c.SandboxClaim.Events = ptr.To(true)
	}
	if c.SandboxClaim.ObservabilityAnnotations == nil {
		c.SandboxClaim.ObservabilityAnnotations = ptr.To(true)
	}
	if c.SandboxClaim.AllowedLabelDomains == nil {
		c.SandboxClaim.AllowedLabelDomains = []string{DefaultAllowedLabelDomain}
	}
	if c.SandboxClaim.AllowedAnnotationDomains == nil {
		c.SandboxClaim.AllowedAnnotationDomains = []string{DefaultAllowedAnnotationDomain}
	}
}

func setNetworkPolicyDefaults(np *NetworkPolicySettings) {
	if np.Router.Namespace == "" {
		np.Router.Namespace = DefaultRouterNamespace
	}
	if np.Router.PodLabels == nil {
		np.Router.PodLabels = DefaultRouterPodLabels()
	}
	if np.EgressProxy.Namespace == "" {
		np.EgressProxy.Namespace = DefaultRouterNamespace
	}
	if np.EgressProxy.PodLabels == nil {
		np.EgressProxy.PodLabels = map[string]string{"app.kubernetes.io/name": contract.EgressServiceName}
	}
	if np.ClusterDNS.Namespace == "" {
		np.ClusterDNS.Namespace = DefaultClusterDNSNamespace
	}
	if np.ClusterDNS.PodLabels == nil {
		np.ClusterDNS.PodLabels = DefaultClusterDNSPodLabels()
	}
}

// ProxyURL is the proxy sandboxes with spec.egress get in HTTP_PROXY and HTTPS_PROXY: url, or
// the kubox-egress Service of namespace.
func (s *EgressProxySettings) ProxyURL(clusterDomain string) string {
	if s.URL != "" {
		return s.URL
	}
	return contract.EgressProxyURL(s.Namespace, clusterDomain)
}

// ProxyPort is the port of url (contract.EgressProxyPort without one), the port the template's
// NetworkPolicy opens to kubox-egress; an error says why url is not http://HOST:PORT.
func (s *EgressProxySettings) ProxyPort() (int32, error) {
	if s.URL == "" {
		return contract.EgressProxyPort, nil
	}
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return 0, fmt.Errorf("must be http://HOST:PORT, the address of kubox-egress's proxy")
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || port == 0 {
		return 0, fmt.Errorf("port %q must be between 1 and 65535", u.Port())
	}
	return int32(port), nil
}
