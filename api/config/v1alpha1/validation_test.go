package v1alpha1

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	type fieldErr struct {
		Type  field.ErrorType
		Field string
	}
	cases := map[string]struct {
		mutate func(*ControllerConfiguration)
		want   []fieldErr
	}{
		"defaults are valid": {mutate: func(*ControllerConfiguration) {}},
		"a valid custom configuration": {mutate: func(c *ControllerConfiguration) {
			c.ClusterDomain = "corp.example.com"
			c.ClientConnection.QPS = ptr.To[float32](0.5)
			c.ClientConnection.Burst = ptr.To[int32](1)
			c.Controllers.Sandbox.Workers = ptr.To[int32](1)
			c.LeaderElection.Namespace = "kubox-system"
		}},
		"workers at the upper bound": {mutate: func(c *ControllerConfiguration) { c.Controllers.Sandbox.Workers = ptr.To[int32](1000) }},
		"negative qps turns rate limiting off": {mutate: func(c *ControllerConfiguration) {
			c.ClientConnection.QPS = ptr.To[float32](-1)
		}},
		"clusterDomain not a DNS subdomain": {
			mutate: func(c *ControllerConfiguration) { c.ClusterDomain = "Cluster_Local" },
			want:   []fieldErr{{field.ErrorTypeInvalid, "clusterDomain"}},
		},
		"egress proxy on the node": {mutate: func(c *ControllerConfiguration) {
			c.NetworkPolicy.EgressProxy.URL = "http://10.77.0.1:3128"
			c.NetworkPolicy.EgressProxy.CIDRs = []string{"10.77.0.1/32"}
		}},
		"egress proxy url without a port": {
			mutate: func(c *ControllerConfiguration) { c.NetworkPolicy.EgressProxy.URL = "http://10.77.0.1" },
			want:   []fieldErr{{field.ErrorTypeInvalid, "networkPolicy.egressProxy.url"}},
		},
		"egress proxy url over https": {
			mutate: func(c *ControllerConfiguration) { c.NetworkPolicy.EgressProxy.URL = "https://egress:3128" },
			want:   []fieldErr{{field.ErrorTypeInvalid, "networkPolicy.egressProxy.url"}},
		},
		"egress proxy cidr not a CIDR": {
			mutate: func(c *ControllerConfiguration) { c.NetworkPolicy.EgressProxy.CIDRs = []string{"10.77.0.1"} },
			want:   []fieldErr{{field.ErrorTypeInvalid, "networkPolicy.egressProxy.cidrs[0]"}},
		},
		"egress proxy namespace invalid": {
			mutate: func(c *ControllerConfiguration) { c.NetworkPolicy.EgressProxy.Namespace = "Kubox" },
			want:   []fieldErr{{field.ErrorTypeInvalid, "networkPolicy.egressProxy.namespace"}},
		},
		"clusterDomain empty": {
			mutate: func(c *ControllerConfiguration) { c.ClusterDomain = "" },
			want:   []fieldErr{{field.ErrorTypeInvalid, "clusterDomain"}},
		},
		"qps NaN": {
			mutate: func(c *ControllerConfiguration) { c.ClientConnection.QPS = ptr.To(float32(math.NaN())) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "clientConnection.qps"}},
		},
		"qps +Inf": {
			mutate: func(c *ControllerConfiguration) { c.ClientConnection.QPS = ptr.To(float32(math.Inf(1))) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "clientConnection.qps"}},
		},
		"memoryLimitRatio 0 turns the limit off": {mutate: func(c *ControllerConfiguration) {
			c.MemoryLimitRatio = ptr.To[float32](0)
		}},
		"memoryLimitRatio 1": {mutate: func(c *ControllerConfiguration) { c.MemoryLimitRatio = ptr.To[float32](1) }},
		"memoryLimitRatio above 1": {
			mutate: func(c *ControllerConfiguration) { c.MemoryLimitRatio = ptr.To[float32](1.5) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "memoryLimitRatio"}},
		},
		"memoryLimitRatio negative": {
			mutate: func(c *ControllerConfiguration) { c.MemoryLimitRatio = ptr.To[float32](-0.1) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "memoryLimitRatio"}},
		},
		"memoryLimitRatio NaN": {
			mutate: func(c *ControllerConfiguration) { c.MemoryLimitRatio = ptr.To(float32(math.NaN())) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "memoryLimitRatio"}},
		},
		"burst zero": {
			mutate: func(c *ControllerConfiguration) { c.ClientConnection.Burst = ptr.To[int32](0) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "clientConnection.burst"}},
		},
		"apiConnections zero": {
			mutate: func(c *ControllerConfiguration) { c.ClientConnection.APIConnections = ptr.To[int32](0) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "clientConnection.apiConnections"}},
		},
		"apiConnections above 64": {
			mutate: func(c *ControllerConfiguration) { c.ClientConnection.APIConnections = ptr.To[int32](65) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "clientConnection.apiConnections"}},
		},
		"workers zero": {
			mutate: func(c *ControllerConfiguration) { c.Controllers.Sandbox.Workers = ptr.To[int32](0) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "controllers.sandbox.workers"}},
		},
		"workers above 1000": {
			mutate: func(c *ControllerConfiguration) { c.Controllers.Sandbox.Workers = ptr.To[int32](1001) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "controllers.sandbox.workers"}},
		},
		"extension workers out of range": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.SandboxTemplate.Workers = ptr.To[int32](0)
				c.Controllers.SandboxWarmPool.Workers = ptr.To[int32](1001)
				c.Controllers.SandboxClaim.Workers = ptr.To[int32](-1)
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "controllers.sandboxTemplate.workers"},
				{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.workers"},
				{field.ErrorTypeInvalid, "controllers.sandboxClaim.workers"},
			},
		},
		"warm pool settings not positive": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.SandboxWarmPool.MaxBatchSize = ptr.To[int32](0)
				c.Controllers.SandboxWarmPool.ReadinessGracePeriod.Duration = 0
				c.Controllers.SandboxWarmPool.UnschedulableRecheckInterval.Duration = -1
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.maxBatchSize"},
				{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.readinessGracePeriod"},
				{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.unschedulableRecheckInterval"},
			},
		},
		"refill settings negative": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.SandboxWarmPool.ReplenishDelay.Duration = -time.Millisecond
				c.Controllers.SandboxWarmPool.StatusBatchPeriod.Duration = -time.Second
				c.Controllers.SandboxWarmPool.MaxRefillRate = ptr.To[float32](-1)
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.replenishDelay"},
				{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.statusBatchPeriod"},
				{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.maxRefillRate"},
			},
		},
		"node API port and URL invalid": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.Sandbox.Memory.NodeAPIPort = ptr.To[int32](0)
				c.Controllers.Sandbox.Memory.NodeAPIURL = "127.0.0.1:16097"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "controllers.sandbox.memory.nodeAPIPort"},
				{field.ErrorTypeInvalid, "controllers.sandbox.memory.nodeAPIURL"},
			},
		},
		"node API URL valid": {
			mutate: func(c *ControllerConfiguration) { c.Controllers.Sandbox.Memory.NodeAPIURL = "http://127.0.0.1:16097" },
		},
		"refill rate not finite": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.SandboxWarmPool.MaxRefillRate = ptr.To(float32(math.Inf(1)))
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "controllers.sandboxWarmPool.maxRefillRate"}},
		},
		"refill off and unpaced are valid": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.SandboxWarmPool.ReplenishDelay.Duration = 0
				c.Controllers.SandboxWarmPool.StatusBatchPeriod.Duration = 0
				c.Controllers.SandboxWarmPool.MaxRefillRate = ptr.To[float32](0.5)
			},
		},
		"allowed label domain not a DNS subdomain": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.SandboxClaim.AllowedLabelDomains = []string{"ok.example.com", "Not_OK"}
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "controllers.sandboxClaim.allowedLabelDomains[1]"}},
		},
		"allowed annotation domain not a DNS subdomain": {
			mutate: func(c *ControllerConfiguration) {
				c.Controllers.SandboxClaim.AllowedAnnotationDomains = []string{"sidecar.istio.io/", "ok.example.com"}
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "controllers.sandboxClaim.allowedAnnotationDomains[0]"}},
		},
		"network policy peers invalid": {
			mutate: func(c *ControllerConfiguration) {
				c.NetworkPolicy.Router.Namespace = "Bad NS"
				c.NetworkPolicy.ClusterDNS.PodLabels = map[string]string{"k8s-app": "not a value"}
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "networkPolicy.router.namespace"},
				{field.ErrorTypeInvalid, "networkPolicy.clusterDNS.podLabels[k8s-app]"},
			},
		},
		"leader election namespace not a DNS label": {
			mutate: func(c *ControllerConfiguration) { c.LeaderElection.Namespace = "kubox.system" },
			want:   []fieldErr{{field.ErrorTypeInvalid, "leaderElection.namespace"}},
		},
		"agent ports out of range": {
			mutate: func(c *ControllerConfiguration) {
				c.Agent.Port = ptr.To[int32](0)
				c.Agent.CompatibilityPort = ptr.To[int32](70000)
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "agent.port"}, {field.ErrorTypeInvalid, "agent.compatibilityPort"}},
		},
		"agent compatibility port equal to its port": {
			mutate: func(c *ControllerConfiguration) { c.Agent.CompatibilityPort = ptr.To[int32](7070) },
			want:   []fieldErr{{field.ErrorTypeInvalid, "agent.compatibilityPort"}},
		},
		"agent compatibility port 0 turns the APIs off": {
			mutate: func(c *ControllerConfiguration) { c.Agent.CompatibilityPort = ptr.To[int32](0) },
		},
		"agent image pull policy unknown": {
			mutate: func(c *ControllerConfiguration) { c.Agent.ImagePullPolicy = "Sometimes" },
			want:   []fieldErr{{field.ErrorTypeNotSupported, "agent.imagePullPolicy"}},
		},
		"usage to an S3 bucket": {mutate: func(c *ControllerConfiguration) {
			c.Usage.Enabled = ptr.To(true)
			c.Usage.PrincipalLabel = "example.com/user"
			c.Usage.Sinks = UsageSinks{Stdout: ptr.To(false), S3: &ObjectStore{Endpoint: "s3.example.com:443", Bucket: "usage",
				AccessKeyIDFile: "/etc/s3/id", SecretAccessKeyFile: "/etc/s3/secret"}}
		}},
		"usage principal label not a label key": {
			mutate: func(c *ControllerConfiguration) { c.Usage.PrincipalLabel = "not a key" },
			want:   []fieldErr{{field.ErrorTypeInvalid, "usage.principalLabel"}},
		},
		"usage bounds out of range": {
			mutate: func(c *ControllerConfiguration) {
				c.Usage.MaxLabelValues = ptr.To[int32](0)
				c.Usage.SummaryInterval.Duration = time.Millisecond
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "usage.maxLabelValues"}, {field.ErrorTypeInvalid, "usage.summaryInterval"}},
		},
		"usage kubelet reads out of range, CA and no verification both": {
			mutate: func(c *ControllerConfiguration) {
				c.Usage.Kubelet.Interval.Duration = time.Second
				c.Usage.Kubelet.CAFile = "/etc/kubelet-ca/ca.crt"
				c.Usage.Kubelet.InsecureSkipTLSVerify = true
			},
			want: []fieldErr{{field.ErrorTypeInvalid, "usage.kubelet.interval"}, {field.ErrorTypeInvalid, "usage.kubelet.insecureSkipTLSVerify"}},
		},
		"usage enabled without a sink": {
			mutate: func(c *ControllerConfiguration) {
				c.Usage.Enabled = ptr.To(true)
				c.Usage.Sinks.Stdout = ptr.To(false)
			},
			want: []fieldErr{{field.ErrorTypeRequired, "usage.sinks"}},
		},
		"usage S3 sink incomplete": {
			mutate: func(c *ControllerConfiguration) {
				c.Usage.Sinks.S3 = &ObjectStore{Endpoint: "https://s3.example.com"}
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "usage.sinks.s3.endpoint"},
				{field.ErrorTypeRequired, "usage.sinks.s3.bucket"},
				{field.ErrorTypeRequired, "usage.sinks.s3.accessKeyIDFile"},
				{field.ErrorTypeRequired, "usage.sinks.s3.secretAccessKeyFile"},
			},
		},
		"every problem is reported": {
			mutate: func(c *ControllerConfiguration) {
				c.ClusterDomain = "-bad-"
				c.ClientConnection.Burst = ptr.To[int32](-1)
				c.Controllers.Sandbox.Workers = ptr.To[int32](-3)
				c.LeaderElection.Namespace = "UPPER"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "clusterDomain"},
				{field.ErrorTypeInvalid, "clientConnection.burst"},
				{field.ErrorTypeInvalid, "controllers.sandbox.workers"},
				{field.ErrorTypeInvalid, "leaderElection.namespace"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := defaulted()
			tc.mutate(c)
			var got []fieldErr
			for _, e := range Validate(c) {
				got = append(got, fieldErr{e.Type, e.Field})
				if e.Detail == "" {
					t.Errorf("%s: error without a detail saying what is allowed", e.Field)
				}
			}
			// A field may have several complaints (a domain can break more than one rule): compare
			// the set of fields, in order of first appearance.
			if diff := cmp.Diff(tc.want, dedupe(got)); diff != "" {
				t.Errorf("Validate fields (-want +got):\n%s", diff)
			}
		})
	}
}

func dedupe[T comparable](xs []T) []T {
	var out []T
	seen := map[T]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
