package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerConfiguration configures kubox-controller.
// +kubebuilder:object:root=true
type ControllerConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// clusterDomain is the DNS domain of the cluster, used in a sandbox's status.serviceFQDN.
	// Default: cluster.local.
	// +optional
	ClusterDomain string `json:"clusterDomain,omitempty"`

	// clientConnection limits the controller's requests to the Kubernetes API.
	// +optional
	ClientConnection ClientConnection `json:"clientConnection,omitempty"`

	// controllers holds per-controller settings.
	// +optional
	Controllers Controllers `json:"controllers,omitempty"`

	// metrics configures the Prometheus metrics endpoint.
	// +optional
	Metrics Metrics `json:"metrics,omitempty"`

	// health configures the /healthz and /readyz endpoints.
	// +optional
	Health Health `json:"health,omitempty"`

	// leaderElection configures leader election between controller replicas.
	// +optional
	LeaderElection LeaderElection `json:"leaderElection,omitempty"`

	// networkPolicy configures the NetworkPolicy a SandboxTemplate gets by default.
	// +optional
	NetworkPolicy NetworkPolicySettings `json:"networkPolicy,omitempty"`

	// agent configures kubox-agent in the sandboxes that ask for it (spec.agent).
	// +optional
	Agent AgentSettings `json:"agent,omitempty"`

	// usage configures usage metering (docs/usage.md): per-sandbox running and suspended
	// seconds, wakes and requested CPU and memory, exported as metrics, summarised in
	// Sandbox status.usage and written as one record per sandbox when it is deleted.
	// +optional
	Usage UsageSettings `json:"usage,omitempty"`

	// memoryLimitRatio sets the Go runtime's soft memory limit to this share of the container's
	// memory limit (the cgroup's memory.max), so the garbage collector works harder as the
	// controller nears its limit instead of letting the heap double before each collection.
	// 0 leaves the runtime without a limit; a GOMEMLIMIT environment variable takes precedence.
	// Between 0 and 1. Default: 0.9.
	// +optional
	MemoryLimitRatio *float32 `json:"memoryLimitRatio,omitempty"`
}

// AgentSettings configures how the controller puts kubox-agent into sandboxes.
type AgentSettings struct {
	// image holds the static kubox-agent binary at /kubox-agent; an init container copies it
	// into each sandbox that asks for the agent. No default: until it is set, such sandboxes
	// get no Pod and say so in their Ready condition.
	// +optional
	Image string `json:"image,omitempty"`

	// imagePullPolicy of the init container. Default: IfNotPresent.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// port is the agent's API port when a sandbox does not set spec.agent.port. Default: 7070.
	// +optional
	Port *int32 `json:"port,omitempty"`

	// compatibilityPort is the port of agent-sandbox's runtime APIs when a sandbox does not set
	// spec.agent.compatibilityPort; 0 turns them off. Default: 8888.
	// +optional
	CompatibilityPort *int32 `json:"compatibilityPort,omitempty"`

	// tokenKeyFile holds the key, shared with the router, from which each sandbox's agent token
	// is derived (HMAC-SHA256 of the sandbox's UID). At least 32 bytes. No default: until it is
	// set, sandboxes that ask for the agent get no Pod and say so in their Ready condition.
	// +optional
	TokenKeyFile string `json:"tokenKeyFile,omitempty"`
}

// ClientConnection limits requests to the Kubernetes API.
type ClientConnection struct {
	// qps is the sustained rate of requests per second to the API server; a negative value turns
	// client-side rate limiting off (the API server's priority and fairness still applies).
	// Default: -1.
	// +optional
	QPS *float32 `json:"qps,omitempty"`

	// burst is the number of requests allowed above qps for a short time. Default: 100.
	// +optional
	Burst *int32 `json:"burst,omitempty"`

	// apiConnections is how many HTTP/2 connections to the API server the controller spreads its
	// requests over, round-robin (agent-sandbox's --api-connections). One connection carries at
	// most the server's --http2-max-streams-per-connection requests at once. Default: 1; see
	// docs/benchmarks.md for when more helped.
	// +optional
	APIConnections *int32 `json:"apiConnections,omitempty"`

	// separateWatchConnection gives the informers' watches a connection of their own, so event
	// delivery never waits behind writes (agent-sandbox's --separate-watch-connection).
	// Default: false.
	// +optional
	SeparateWatchConnection *bool `json:"separateWatchConnection,omitempty"`
}

// Controllers holds per-controller settings.
type Controllers struct {
	// sandbox configures the Sandbox controller. Default workers: 100.
	// +optional
	Sandbox SandboxSettings `json:"sandbox,omitempty"`

	// extensions turns the SandboxTemplate, SandboxWarmPool and SandboxClaim controllers on.
	// Default: true.
	// +optional
	Extensions *bool `json:"extensions,omitempty"`

	// sandboxTemplate configures the SandboxTemplate controller. Default workers: 1.
	// +optional
	SandboxTemplate ControllerSettings `json:"sandboxTemplate,omitempty"`

	// sandboxWarmPool configures the SandboxWarmPool controller. Default workers: 4.
	// +optional
	SandboxWarmPool WarmPoolSettings `json:"sandboxWarmPool,omitempty"`

	// sandboxClaim configures the SandboxClaim controller. Default workers: 50.
	// +optional
	SandboxClaim ClaimSettings `json:"sandboxClaim,omitempty"`
}

// WarmPoolSettings configures the SandboxWarmPool controller.
type WarmPoolSettings struct {
	ControllerSettings `json:",inline"`

	// maxBatchSize is the most members one pass of a pool creates. Default: 300.
	// +optional
	MaxBatchSize *int32 `json:"maxBatchSize,omitempty"`

	// readinessGracePeriod is how long a member may stay not Ready before it is replaced (members
	// whose Pod is unschedulable are held and reported instead). Default: 5m.
	// +optional
	ReadinessGracePeriod *metav1.Duration `json:"readinessGracePeriod,omitempty"`

	// unschedulableRecheckInterval is how often a pool with unschedulable members is looked at
	// again. Default: 1m.
	// +optional
	UnschedulableRecheckInterval *metav1.Duration `json:"unschedulableRecheckInterval,omitempty"`

	// replenishDelay holds a pool's refill while claims keep taking its members: each member a
	// claim takes re-arms it, and once it runs out the pool creates its whole deficit in one
	// batch. A claim's two writes then never queue behind the Sandbox, Pod and status writes of
	// refilling the members just taken. A pool left with no Ready member waits no longer than
	// one delay; a pool whose claims never pause is refilled at least every
	// 5 × replenishDelay. 0 refills at once. Default: 200ms (see DefaultWarmPoolReplenishDelay).
	// +optional
	ReplenishDelay *metav1.Duration `json:"replenishDelay,omitempty"`

	// statusBatchPeriod batches a pool's status writes: a change that is only counting (members
	// taken, created or becoming Ready, and the Ready and Progressing conditions moving between
	// their ordinary reasons) waits until this long after the first change not yet written, so a
	// claim, the refill it starts and the new member's start cost the pool one status write, or
	// none when they are over before it. The pool turning Ready again, a new generation, errors,
	// unschedulable members and a passed progress deadline are written at once. 0 writes every
	// change at once. Default: 1s (see DefaultWarmPoolStatusBatchPeriod).
	// +optional
	StatusBatchPeriod *metav1.Duration `json:"statusBatchPeriod,omitempty"`

	// maxRefillRate paces each pool's creations, in members per second (a token bucket holding
	// at most max(1, maxRefillRate) members); 0 does not pace them. Default: 0.
	// +optional
	MaxRefillRate *float32 `json:"maxRefillRate,omitempty"`
}

// SandboxSettings configures the Sandbox controller.
type SandboxSettings struct {
	ControllerSettings `json:",inline"`

	// events says whether the controller records Normal Events about Sandboxes
	// (SandboxPodCreated, SandboxReady, SandboxSuspended, ...); Warnings are recorded whatever it
	// says. Each is one API write, and a claim served from a warm pool costs two of them (its
	// replacement's Pod created, then Ready). Default: true, as agent-sandbox.
	// +optional
	Events *bool `json:"events,omitempty"`

	// memory says how the controller reaches kubox-node, which checkpoints the Pods of sandboxes
	// with spec.suspendPolicy.keepMemory (docs/checkpoint.md).
	// +optional
	Memory MemorySettings `json:"memory,omitempty"`
}

// MemorySettings configures how the Sandbox controller reaches kubox-node, the snapshot API on
// each gVisor node.
type MemorySettings struct {
	// tokenFile holds the node token kubox-node requires, read at each call. Empty: memory is
	// never kept, and a sandbox that asks for it is suspended without it (MemoryKept=False).
	// +optional
	TokenFile string `json:"tokenFile,omitempty"`
	// nodeAPIPort is kubox-node's port, dialled at the address of the Pod's node
	// (status.hostIP). Default: 9097.
	// +optional
	NodeAPIPort *int32 `json:"nodeAPIPort,omitempty"`
	// nodeAPIURL, when set, is kubox-node's URL whatever the node: for a one-node cluster such as
	// the local environment's, where kubox-node listens on 127.0.0.1.
	// +optional
	NodeAPIURL string `json:"nodeAPIURL,omitempty"`
}

// ClaimSettings configures the SandboxClaim controller.
type ClaimSettings struct {
	ControllerSettings `json:",inline"`

	// allowedLabelDomains are the domains a label in a claim's additionalPodMetadata may have
	// (the key's prefix, or a subdomain of it). Default: [sandbox.users.io], as agent-sandbox.
	// +optional
	AllowedLabelDomains []string `json:"allowedLabelDomains,omitempty"`

	// allowedAnnotationDomains are the domains an annotation in a claim's additionalPodMetadata
	// may have (the key's prefix, or a subdomain of it), for every template; a template's
	// spec.claimPolicy.allowedAnnotationDomains adds to them. The annotation
	// cluster-autoscaler.kubernetes.io/safe-to-evict is always allowed, and so are keys that are
	// bare names with no domain and no dot (owner, note: the end user's, as agent-sandbox allows).
	// Default: [sandbox.users.io]. kubox addition: agent-sandbox lets a claim set any annotation
	// outside its reserved domains, which lets it choose networks, mesh sidecars and runtime options.
	// +optional
	AllowedAnnotationDomains []string `json:"allowedAnnotationDomains,omitempty"`

	// events says whether the controller records Events about claims (SandboxAdopted,
	// SandboxProvisioned, ClaimExpired, DuplicateSandboxDeleted). Each is one API write, sent
	// off a claim's critical path; false saves it. Default: true, as agent-sandbox
	// (whose --disable-claim-events flag sets it to false here too).
	// +optional
	Events *bool `json:"events,omitempty"`

	// observabilityAnnotations says whether the controller writes agent-sandbox's annotations
	// agents.x-k8s.io/sandbox-name (the bound sandbox) and
	// agents.x-k8s.io/controller-first-observed-at (when it first saw the claim) on a claim once it
	// is bound: one merge patch per claim, after the claim is bound, so off its critical path.
	// Default: true, as agent-sandbox (whose --disable-claim-observability-annotations flag sets
	// it to false here too); false saves the write.
	// +optional
	ObservabilityAnnotations *bool `json:"observabilityAnnotations,omitempty"`
}

// NetworkPolicySettings configures the secure-default NetworkPolicy of a SandboxTemplate.
type NetworkPolicySettings struct {
	// router selects the pods allowed to reach sandboxes (the kubox router).
	// Default: namespace kubox-system, pods labelled app.kubernetes.io/name=kubox-router.
	// +optional
	Router PeerSelector `json:"router,omitempty"`

	// clusterDNS selects the cluster's DNS servers, which sandboxes may query.
	// Default: namespace kube-system, pods labelled k8s-app=kube-dns.
	// +optional
	ClusterDNS PeerSelector `json:"clusterDNS,omitempty"`

	// egressProxy says where kubox-egress is, the only destination (besides cluster DNS) of
	// sandboxes whose template has spec.egress. Default: namespace kubox-system, pods labelled
	// app.kubernetes.io/name=kubox-egress, behind the Service kubox-egress.
	// +optional
	EgressProxy EgressProxySettings `json:"egressProxy,omitempty"`
}

// EgressProxySettings says where sandboxes with spec.egress find kubox-egress: by default its
// Pods, which namespace and podLabels select, behind the kubox-egress Service of namespace.
type EgressProxySettings struct {
	PeerSelector `json:",inline"`

	// url is the proxy sandboxes get in HTTP_PROXY and HTTPS_PROXY, http://HOST:PORT; the
	// template's NetworkPolicy opens PORT. Default: the kubox-egress Service of namespace,
	// http://kubox-egress.<namespace>.svc.<clusterDomain>:3128.
	// +optional
	URL string `json:"url,omitempty"`

	// cidrs, when set, are the addresses at which the template's NetworkPolicy lets sandboxes
	// reach kubox-egress, in place of the Pods namespace and podLabels select: for a
	// kubox-egress outside the Pod network, such as a process on the node (kubox's local node
	// runs it so, on the Pod bridge's address).
	// +optional
	CIDRs []string `json:"cidrs,omitempty"`
}

// PeerSelector selects pods in one namespace.
type PeerSelector struct {
	// namespace is the pods' namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// podLabels are labels the pods have.
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`
}

// ControllerSettings holds the settings every controller has.
type ControllerSettings struct {
	// workers is the number of Sandboxes reconciled at once. Default: 100.
	// +optional
	Workers *int32 `json:"workers,omitempty"`
}

// Metrics configures the metrics endpoint.
type Metrics struct {
	// bindAddress is the address the metrics endpoint listens on; "0" turns it off.
	// Default: ":8080".
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// Health configures the health probe endpoint.
type Health struct {
	// bindAddress is the address /healthz and /readyz listen on; "0" turns them off.
	// Default: ":8081".
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// LeaderElection configures leader election.
type LeaderElection struct {
	// enabled turns leader election on, so only one replica reconciles at a time. Default: true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// namespace holds the election's Lease; empty means the namespace the controller runs in.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// id is the name of the Lease. Default: kubox-controller.kubox.dev.
	// +optional
	ID string `json:"id,omitempty"`
}

// UsageSettings configures usage metering.
type UsageSettings struct {
	// enabled turns usage metering on: the kubox_usage_* metrics, status.usage on each Sandbox
	// and a usage record per sandbox in the sinks when it is deleted. Default: false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// principalLabel is the key of the Sandbox label whose value names who the sandbox is for
	// (an end user, a tenant, an agent run): the record's principal and the metrics' principal
	// label. A claim sets it through additionalPodMetadata.labels. Empty: every principal is
	// "unknown".
	// +optional
	PrincipalLabel string `json:"principalLabel,omitempty"`

	// maxLabelValues bounds the distinct values of each of the metrics' tenant-controlled labels
	// (principal, template); later values count under "other". Between 1 and 10000. Default: 100.
	// +optional
	MaxLabelValues *int32 `json:"maxLabelValues,omitempty"`

	// summaryInterval is the least time between two writes of a running sandbox's
	// status.usage; it is also written when the sandbox is suspended, and never when nothing
	// changed. At least 1s. Default: 5m.
	// +optional
	SummaryInterval *metav1.Duration `json:"summaryInterval,omitempty"`

	// sinks are where usage records go.
	// +optional
	Sinks UsageSinks `json:"sinks,omitempty"`

	// kubelet reads the kubelets' resource metrics for the figures usage measures (a record's
	// measured object, the kubox_usage_cpu_seconds_total and kubox_usage_memory_gib_seconds_total
	// metrics) beside those it counts from requests.
	// +optional
	Kubelet KubeletMetrics `json:"kubelet,omitempty"`
}

// KubeletMetrics configures reading the kubelets' resource metrics (/metrics/resource), directly
// at each node's address, with the controller's own credentials: the kubelet authorizes the read
// as get on nodes/metrics.
type KubeletMetrics struct {
	// enabled reads, every interval, the resource metrics of each kubelet that runs a sandbox's
	// Pod. Default: true (when usage is enabled).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// interval is the time between two reads of each kubelet: the CPU a Pod uses after its last
	// read is not counted. Between 5s and 10m. Default: 30s.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// caFile holds the certificates that sign the kubelets' serving certificates. Empty: the
	// controller's own CA (the cluster CA, which signs them when kubelets bootstrap their serving
	// certificates: serverTLSBootstrap).
	// +optional
	CAFile string `json:"caFile,omitempty"`

	// insecureSkipTLSVerify reads kubelets without checking their serving certificates
	// (self-signed ones): whatever answers on a node's address is then sent the controller's
	// credentials. Default: false.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
}

// UsageSinks says where usage records are written. Each record goes to every sink set.
type UsageSinks struct {
	// stdout writes each record as one JSON line on the controller's standard output.
	// Default: true when s3 is not set, false when it is.
	// +optional
	Stdout *bool `json:"stdout,omitempty"`

	// s3 writes each record as one NDJSON object,
	// {prefix}/{yyyy}/{mm}/{dd}/{namespace}/{uid}.ndjson, to a bucket of an S3-compatible store.
	// +optional
	S3 *ObjectStore `json:"s3,omitempty"`
}

// ObjectStore is a bucket of an S3-compatible object store (AWS S3, MinIO, SeaweedFS, Ceph RGW)
// and the files holding its credentials.
type ObjectStore struct {
	// endpoint is host:port of the S3 API, without a scheme.
	Endpoint string `json:"endpoint"`

	// bucket is the bucket's name.
	Bucket string `json:"bucket"`

	// prefix is the folder of the bucket the objects go under; empty: the bucket's root.
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// region is the bucket's region; empty: asked of the endpoint.
	// +optional
	Region string `json:"region,omitempty"`

	// insecure talks plain HTTP to the endpoint instead of TLS. Default: false.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// accessKeyIDFile is the file holding the access key id (a mounted Secret's key).
	AccessKeyIDFile string `json:"accessKeyIDFile"`

	// secretAccessKeyFile is the file holding the secret access key (a mounted Secret's key).
	SecretAccessKeyFile string `json:"secretAccessKeyFile"`
}
