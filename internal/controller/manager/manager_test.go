package manager

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
)

func parse(t *testing.T, args ...string) (*configv1alpha1.ControllerConfiguration, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%v): %v", args, err)
	}
	return f.Config()
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFlagsOverrideTheFile(t *testing.T) {
	file := writeConfig(t, `apiVersion: config.kubox.dev/v1alpha1
kind: ControllerConfiguration
clusterDomain: file.example
controllers:
  sandbox:
    workers: 7
metrics:
  bindAddress: ":9000"
`)
	cases := map[string]struct {
		args []string
		want func(*configv1alpha1.ControllerConfiguration)
	}{
		"no flags: defaults": {
			want: func(*configv1alpha1.ControllerConfiguration) {},
		},
		"file only": {
			args: []string{"--config", file},
			want: func(c *configv1alpha1.ControllerConfiguration) {
				c.ClusterDomain = "file.example"
				c.Controllers.Sandbox.Workers = ptr.To[int32](7)
				c.Metrics.BindAddress = ":9000"
			},
		},
		"flags given win over the file, flags not given leave it": {
			args: []string{"--config", file, "--sandbox-concurrent-workers=3", "--leader-elect=false",
				"--leader-election-namespace=kube-system", "--kube-api-qps=20", "--kube-api-burst=40",
				"--health-probe-bind-address=127.0.0.1:1", "--cluster-domain=flag.example",
				"--extensions=false", "--sandbox-template-concurrent-workers=2", "--sandbox-warm-pool-concurrent-workers=3",
				"--sandbox-claim-concurrent-workers=9", "--sandbox-warm-pool-max-batch-size=11",
				"--sandbox-warm-pool-readiness-grace-period=30s", "--sandbox-warm-pool-unschedulable-recheck-interval=2m",
				"--disable-claim-events"},
			want: func(c *configv1alpha1.ControllerConfiguration) {
				c.ClusterDomain = "flag.example"
				c.Controllers.Sandbox.Workers = ptr.To[int32](3)
				c.Metrics.BindAddress = ":9000"
				c.Health.BindAddress = "127.0.0.1:1"
				c.LeaderElection.Enabled = ptr.To(false)
				c.LeaderElection.Namespace = "kube-system"
				c.ClientConnection.QPS = ptr.To[float32](20)
				c.ClientConnection.Burst = ptr.To[int32](40)
				c.Controllers.Extensions = ptr.To(false)
				c.Controllers.SandboxTemplate.Workers = ptr.To[int32](2)
				c.Controllers.SandboxWarmPool.Workers = ptr.To[int32](3)
				c.Controllers.SandboxClaim.Workers = ptr.To[int32](9)
				c.Controllers.SandboxWarmPool.MaxBatchSize = ptr.To[int32](11)
				c.Controllers.SandboxWarmPool.ReadinessGracePeriod = &metav1.Duration{Duration: 30 * time.Second}
				c.Controllers.SandboxWarmPool.UnschedulableRecheckInterval = &metav1.Duration{Duration: 2 * time.Minute}
				c.Controllers.SandboxClaim.Events = ptr.To(false)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := &configv1alpha1.ControllerConfiguration{}
			configv1alpha1.SetDefaults(want)
			tc.want(want)
			got, err := parse(t, tc.args...)
			if err != nil {
				t.Fatalf("Config: %v", err)
			}
			want.TypeMeta, got.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("configuration (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagsAreValidated(t *testing.T) {
	_, err := parse(t, "--sandbox-concurrent-workers=0")
	if err == nil || !strings.Contains(err.Error(), "controllers.sandbox.workers") {
		t.Fatalf("Config with 0 workers: got %v, want an error naming controllers.sandbox.workers", err)
	}
}

func TestTrimPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"},
			{Name: "main", Image: "i", Command: []string{sandbox.AgentBinary, "--port=7070"}, Args: []string{"--", "sleep"}}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			PodIP:             "10.0.0.1",
			PodIPs:            []corev1.PodIP{{IP: "10.0.0.1"}},
			Message:           "msg",
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c"}},
		},
	}
	got, err := TrimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}},
		Spec: corev1.PodSpec{NodeName: "n1",
			Containers: []corev1.Container{{Name: "main", Command: []string{sandbox.AgentBinary, "--port=7070"}}}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			PodIP:      "10.0.0.1",
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.1"}},
			Message:    "msg",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TrimPod (-want +got):\n%s", diff)
	}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	if got, _ := TrimPod(other); got != other {
		t.Errorf("TrimPod changed a non-Pod object: %v", got)
	}
}

func TestCacheOptionsScopeChildrenByNameHashLabel(t *testing.T) {
	opts := CacheOptions()
	labelled := labels.Set{sandboxv1beta1.SandboxNameHashLabel: "374de8f5"}
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*networkingv1.NetworkPolicy); ok {
			np := labels.Set{sandboxv1beta1.SandboxTemplateRefHashLabel: "374de8f5"}
			if by.Label == nil || !by.Label.Matches(np) || by.Label.Matches(labelled) {
				t.Errorf("NetworkPolicy cache selector %v must select exactly policies with %s", by.Label, sandboxv1beta1.SandboxTemplateRefHashLabel)
			}
			continue
		}
		if by.Label == nil || !by.Label.Matches(labelled) || by.Label.Matches(labels.Set{"app": "x"}) {
			t.Errorf("%T: cache selector %v must select exactly objects with %s", obj, by.Label, sandboxv1beta1.SandboxNameHashLabel)
		}
	}
	if len(opts.ByObject) != 4 {
		t.Errorf("ByObject has %d entries, want Pods, Services, PersistentVolumeClaims and NetworkPolicies", len(opts.ByObject))
	}
	if opts.DefaultTransform == nil {
		t.Error("DefaultTransform is nil; managedFields would be cached")
	}
}

func TestCheckLeaderElection(t *testing.T) {
	cfg := &configv1alpha1.ControllerConfiguration{}
	configv1alpha1.SetDefaults(cfg)
	_, statErr := os.Stat(inClusterNamespaceFile)
	if err := CheckLeaderElection(cfg); (err == nil) != (statErr == nil) {
		t.Errorf("CheckLeaderElection with no namespace (in cluster: %v) = %v", statErr == nil, err)
	}
	cfg.LeaderElection.Namespace = "kube-system"
	if err := CheckLeaderElection(cfg); err != nil {
		t.Errorf("CheckLeaderElection with a namespace = %v, want nil", err)
	}
	cfg.LeaderElection.Namespace = ""
	cfg.LeaderElection.Enabled = ptr.To(false)
	if err := CheckLeaderElection(cfg); err != nil {
		t.Errorf("CheckLeaderElection with leader election off = %v, want nil", err)
	}
}
