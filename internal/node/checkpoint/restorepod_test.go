package checkpoint

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/api/contract"
)

func TestRestoredPod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	src := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "keeper", Namespace: "team-a", UID: types.UID("u1"), ResourceVersion: "7",
			Labels:          map[string]string{"app": "py"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/default-container": "py"},
			OwnerReferences: []metav1.OwnerReference{{Name: "keeper", UID: "s1", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: "old-node",
			InitContainers: []corev1.Container{
				{Name: "kubox-agent-init", Image: "agent"},
				{Name: "proxy", Image: "proxy", RestartPolicy: &always},
			},
			Containers: []corev1.Container{{Name: "py", Image: "python"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.2"},
	}
	got := RestoredPod(src, "keeper-2", "node-b", "/snapshots/team-a/s1")

	if got.Name != "keeper-2" || got.Namespace != "team-a" || got.UID != "" || got.ResourceVersion != "" || got.OwnerReferences != nil {
		t.Errorf("metadata = %+v: want the new name in the same namespace and nothing the API server or the owner set", got.ObjectMeta)
	}
	if got.Annotations[contract.RestoreImageAnnotation] != "/snapshots/team-a/s1/image" || got.Annotations["kubectl.kubernetes.io/default-container"] != "py" {
		t.Errorf("annotations = %v: want the source's and the checkpoint image", got.Annotations)
	}
	if got.Labels["app"] != "py" {
		t.Errorf("labels = %v, want the source's", got.Labels)
	}
	if got.Spec.NodeName != "" || RequiredNode(got) != "node-b" {
		t.Errorf("nodeName %q, required node %q: want no nodeName and node-b, where the checkpoint lives, required", got.Spec.NodeName, RequiredNode(got))
	}
	if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Name != "proxy" {
		t.Errorf("init containers = %v: want only the sidecar, which was running at the checkpoint", got.Spec.InitContainers)
	}
	if got.Status.Phase != "" {
		t.Errorf("status copied: %+v", got.Status)
	}
	got.Labels["app"] = "changed"
	got.Spec.Containers[0].Image = "changed"
	if src.Labels["app"] != "py" || src.Spec.Containers[0].Image != "python" || len(src.Spec.InitContainers) != 2 || src.Annotations[contract.RestoreImageAnnotation] != "" {
		t.Errorf("RestoredPod changed its source: %+v", src)
	}
}

func TestShapeForFilesystemRestoreKeepsInitContainers(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "kubox-agent-init", Image: "agent"}},
		Containers:     []corev1.Container{{Name: "py", Image: "python"}},
	}}
	ShapeForFilesystemRestore(pod, "/snapshots/team-a/s1/image")
	if pod.Annotations[contract.RestoreImageAnnotation] != "/snapshots/team-a/s1/image" || pod.Spec.NodeName != "" || pod.Spec.Affinity != nil {
		t.Errorf("annotations %v, node %q, affinity %v: want the image, and the placement left to RequireNode", pod.Annotations, pod.Spec.NodeName, pod.Spec.Affinity)
	}
	if len(pod.Spec.InitContainers) != 1 || len(pod.Spec.Containers) != 1 {
		t.Errorf("containers %v, init containers %v: a Pod started on a snapshot's files runs all of them", pod.Spec.Containers, pod.Spec.InitContainers)
	}
}

// TestRequireNode: a restoring Pod is required on the snapshot's node through the scheduler, never
// bound with spec.nodeName, and the Pod's own required terms still apply (ANDed with the node).
func TestRequireNode(t *testing.T) {
	on := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-b"}}
	zone := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}
	gpu := corev1.NodeSelectorRequirement{Key: "gpu", Operator: corev1.NodeSelectorOpExists}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{gpu}}}}
	for name, tc := range map[string]struct {
		spec corev1.PodSpec
		want corev1.PodSpec
	}{
		"no affinity, a nodeName of its own": {
			spec: corev1.PodSpec{NodeName: "node-a"},
			want: corev1.PodSpec{Affinity: required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{on}})},
		},
		"the Pod's own terms, each ANDed": {
			spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "gvisor"}, Affinity: required(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{gpu}})},
			want: corev1.PodSpec{NodeSelector: map[string]string{"pool": "gvisor"}, Affinity: required(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}, MatchFields: []corev1.NodeSelectorRequirement{on}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{gpu}, MatchFields: []corev1.NodeSelectorRequirement{on}})},
		},
		"an empty term still matches no node": {
			spec: corev1.PodSpec{Affinity: required(corev1.NodeSelectorTerm{}, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}})},
			want: corev1.PodSpec{Affinity: required(corev1.NodeSelectorTerm{},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}, MatchFields: []corev1.NodeSelectorRequirement{on}})},
		},
		"preferred terms and pod affinity kept": {
			spec: corev1.PodSpec{Affinity: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}}},
			want: corev1.PodSpec{Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred,
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{on}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: tc.spec}
			RequireNode(pod, "node-b")
			if diff := cmp.Diff(tc.want, pod.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			RequireNode(pod, "node-b")
			if diff := cmp.Diff(tc.want, pod.Spec); diff != "" {
				t.Errorf("spec after a second RequireNode (-want +got):\n%s", diff)
			}
		})
	}
}
