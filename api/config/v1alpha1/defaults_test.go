package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// defaulted is the configuration a file that sets nothing amounts to. The values are written out
// here (API defaults are a contract), not taken from the Default* constants.
func defaulted() *ControllerConfiguration {
	return &ControllerConfiguration{
		TypeMeta:      metav1.TypeMeta{APIVersion: "config.kubox.dev/v1alpha1", Kind: "ControllerConfiguration"},
		ClusterDomain: "cluster.local",
		ClientConnection: ClientConnection{QPS: ptr.To[float32](-1), Burst: ptr.To[int32](100), APIConnections: ptr.To[int32](1),
			SeparateWatchConnection: ptr.To(false)},
		Controllers: Controllers{
			Sandbox: SandboxSettings{ControllerSettings: ControllerSettings{Workers: ptr.To[int32](100)}, Events: ptr.To(true),
				Memory: MemorySettings{NodeAPIPort: ptr.To[int32](9097)}},
			Extensions:      ptr.To(true),
			SandboxTemplate: ControllerSettings{Workers: ptr.To[int32](1)},
			SandboxWarmPool: WarmPoolSettings{
				ControllerSettings:           ControllerSettings{Workers: ptr.To[int32](4)},
				MaxBatchSize:                 ptr.To[int32](300),
				ReadinessGracePeriod:         &metav1.Duration{Duration: 5 * time.Minute},
				UnschedulableRecheckInterval: &metav1.Duration{Duration: time.Minute},
				ReplenishDelay:               &metav1.Duration{Duration: 200 * time.Millisecond},
				StatusBatchPeriod:            &metav1.Duration{Duration: time.Second},
				MaxRefillRate:                ptr.To[float32](0),
			},
			SandboxClaim: ClaimSettings{
				ControllerSettings:       ControllerSettings{Workers: ptr.To[int32](50)},
				AllowedLabelDomains:      []string{"sandbox.users.io"},
				AllowedAnnotationDomains: []string{"sandbox.users.io"},
				Events:                   ptr.To(true),
				ObservabilityAnnotations: ptr.To(true),
			},
		},
		Metrics:        Metrics{BindAddress: ":8080"},
		Health:         Health{BindAddress: ":8081"},
		LeaderElection: LeaderElection{Enabled: ptr.To(true), ID: "kubox-controller.kubox.dev"},
		NetworkPolicy: NetworkPolicySettings{
			Router:      PeerSelector{Namespace: "kubox-system", PodLabels: map[string]string{"app.kubernetes.io/name": "kubox-router"}},
			ClusterDNS:  PeerSelector{Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "kube-dns"}},
			EgressProxy: EgressProxySettings{PeerSelector: PeerSelector{Namespace: "kubox-system", PodLabels: map[string]string{"app.kubernetes.io/name": "kubox-egress"}}},
		},
		Agent:            AgentSettings{ImagePullPolicy: corev1.PullIfNotPresent, Port: ptr.To[int32](7070), CompatibilityPort: ptr.To[int32](8888)},
		MemoryLimitRatio: ptr.To[float32](0.9),
		Usage: UsageSettings{Enabled: ptr.To(false), MaxLabelValues: ptr.To[int32](100),
			SummaryInterval: &metav1.Duration{Duration: 5 * time.Minute}, Sinks: UsageSinks{Stdout: ptr.To(true)},
			Kubelet: KubeletMetrics{Enabled: ptr.To(true), Interval: &metav1.Duration{Duration: 30 * time.Second}}},
	}
}

func TestSetDefaults(t *testing.T) {
	cases := map[string]struct {
		in   *ControllerConfiguration
		want func() *ControllerConfiguration
	}{
		"empty": {
			in:   &ControllerConfiguration{},
			want: defaulted,
		},
		"explicit values are kept, including zero and false": {
			in: &ControllerConfiguration{
				ClusterDomain: "corp.example.com",
				ClientConnection: ClientConnection{QPS: ptr.To[float32](0), Burst: ptr.To[int32](0), APIConnections: ptr.To[int32](0),
					SeparateWatchConnection: ptr.To(true)},
				Controllers:      Controllers{Sandbox: SandboxSettings{ControllerSettings: ControllerSettings{Workers: ptr.To[int32](0)}, Events: ptr.To(false)}},
				Metrics:          Metrics{BindAddress: "0"},
				Health:           Health{BindAddress: "127.0.0.1:9000"},
				LeaderElection:   LeaderElection{Enabled: ptr.To(false), Namespace: "kubox-system", ID: "my-lease"},
				MemoryLimitRatio: ptr.To[float32](0),
			},
			want: func() *ControllerConfiguration {
				c := defaulted()
				c.ClusterDomain = "corp.example.com"
				c.ClientConnection = ClientConnection{QPS: ptr.To[float32](0), Burst: ptr.To[int32](0), APIConnections: ptr.To[int32](0),
					SeparateWatchConnection: ptr.To(true)}
				c.Controllers.Sandbox.Workers = ptr.To[int32](0)
				c.Controllers.Sandbox.Events = ptr.To(false)
				c.Metrics.BindAddress = "0"
				c.Health.BindAddress = "127.0.0.1:9000"
				c.LeaderElection = LeaderElection{Enabled: ptr.To(false), Namespace: "kubox-system", ID: "my-lease"}
				c.MemoryLimitRatio = ptr.To[float32](0)
				return c
			},
		},
		"extension settings given are kept, including empty domain lists": {
			in: &ControllerConfiguration{
				Controllers: Controllers{
					Extensions:      ptr.To(false),
					SandboxWarmPool: WarmPoolSettings{MaxBatchSize: ptr.To[int32](5)},
					SandboxClaim:    ClaimSettings{AllowedLabelDomains: []string{}, AllowedAnnotationDomains: []string{}},
				},
				NetworkPolicy: NetworkPolicySettings{Router: PeerSelector{Namespace: "router-ns"}},
			},
			want: func() *ControllerConfiguration {
				c := defaulted()
				c.Controllers.Extensions = ptr.To(false)
				c.Controllers.SandboxWarmPool.MaxBatchSize = ptr.To[int32](5)
				c.Controllers.SandboxClaim.AllowedLabelDomains = []string{}
				c.Controllers.SandboxClaim.AllowedAnnotationDomains = []string{}
				c.NetworkPolicy.Router.Namespace = "router-ns"
				return c
			},
		},
		"usage with an S3 sink writes no stdout by default": {
			in: &ControllerConfiguration{Usage: UsageSettings{Enabled: ptr.To(true), Sinks: UsageSinks{S3: &ObjectStore{Bucket: "b"}}}},
			want: func() *ControllerConfiguration {
				c := defaulted()
				c.Usage.Enabled = ptr.To(true)
				c.Usage.Sinks = UsageSinks{Stdout: ptr.To(false), S3: &ObjectStore{Bucket: "b"}}
				return c
			},
		},
		"usage settings given are kept": {
			in: &ControllerConfiguration{Usage: UsageSettings{MaxLabelValues: ptr.To[int32](7),
				SummaryInterval: &metav1.Duration{Duration: time.Hour}, Sinks: UsageSinks{Stdout: ptr.To(true), S3: &ObjectStore{}}}},
			want: func() *ControllerConfiguration {
				c := defaulted()
				c.Usage.MaxLabelValues = ptr.To[int32](7)
				c.Usage.SummaryInterval = &metav1.Duration{Duration: time.Hour}
				c.Usage.Sinks = UsageSinks{Stdout: ptr.To(true), S3: &ObjectStore{}}
				return c
			},
		},
		"idempotent": {
			in:   defaulted(),
			want: defaulted,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			SetDefaults(tc.in)
			if diff := cmp.Diff(tc.want(), tc.in); diff != "" {
				t.Errorf("SetDefaults (-want +got):\n%s", diff)
			}
		})
	}
}
