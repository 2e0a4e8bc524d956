package manager

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
)

func TestTrimPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"},
			{Name: "main", Image: "i", Command: []string{sandbox.AgentBinary, "--port=7070"}, Args: []string{"--", "sleep"}}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "r", Message: "m"}},
			HostIP:            "192.0.2.1",
			PodIP:             "10.0.0.1",
			PodIPs:            []corev1.PodIP{{IP: "10.0.0.1"}},
			Message:           "msg",
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c"}},
		},
	}
	restored := pod.DeepCopy()
	got, err := TrimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}},
		Spec: corev1.PodSpec{NodeName: "n1",
			Containers: []corev1.Container{{Name: "main", Command: []string{sandbox.AgentBinary, "--port=7070"}}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "r", Message: "m"}},
			HostIP:  "192.0.2.1",
			PodIP:   "10.0.0.1",
			PodIPs:  []corev1.PodIP{{IP: "10.0.0.1"}},
			Message: "msg",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TrimPod (-want +got):\n%s", diff)
	}

	// A Pod restored from a memory snapshot keeps how its containers failed to start.
	restored.Annotations = map[string]string{contract.RestoreImageAnnotation: "/s/image"}
	restored.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "i", RestartCount: 2,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "StartError", Message: "restore failed", ExitCode: 128, ContainerID: "c1"}}}}
	got, _ = TrimPod(restored)
	wantStatuses := []corev1.ContainerStatus{{Name: "main",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "StartError", Message: "restore failed", ExitCode: 128}}}}
	if diff := cmp.Diff(wantStatuses, got.(*corev1.Pod).Status.ContainerStatuses); diff != "" {
		t.Errorf("TrimPod of a restored Pod, container statuses (-want +got):\n%s", diff)
	}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	if got, _ := TrimPod(other); got != other {
		t.Errorf("TrimPod changed a non-Pod object: %v", got)
	}
}

func TestTrimService(t *testing.T) {
	ports := []corev1.ServicePort{{Name: "kubox-agent", Port: 7070}}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, ClusterIPs: []string{corev1.ClusterIPNone},
			Selector: map[string]string{"s": "x"}, Ports: ports, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Type: corev1.ServiceTypeClusterIP},
		Status: corev1.ServiceStatus{Conditions: []metav1.Condition{{Type: "t"}}},
	}
	got, err := TrimService(svc)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"s": "x"}, Ports: ports},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TrimService (-want +got):\n%s", diff)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, _ := TrimService(other); got != other {
		t.Errorf("TrimService changed a non-Service object: %v", got)
	}
}

func TestCacheOptionsScopeChildrenByNameHashLabel(t *testing.T) {
	opts := CacheOptions()
	labelled := labels.Set{sandboxv1beta1.SandboxNameHashLabel: "374de8f5"}
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*sandboxv1beta1.Sandbox); ok {
			if by.Label != nil || by.Transform == nil {
				t.Errorf("Sandbox cache: selector %v, transform set %v; want every Sandbox, trimmed", by.Label, by.Transform != nil)
			}
			continue
		}
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
	if len(opts.ByObject) != 5 {
		t.Errorf("ByObject has %d entries, want Sandboxes, Pods, Services, PersistentVolumeClaims and NetworkPolicies", len(opts.ByObject))
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
