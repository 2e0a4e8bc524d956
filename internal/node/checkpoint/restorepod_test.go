package checkpoint

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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
	if got.Annotations[RestoreImageAnnotation] != "/snapshots/team-a/s1/image" || got.Annotations["kubectl.kubernetes.io/default-container"] != "py" {
		t.Errorf("annotations = %v: want the source's and the checkpoint image", got.Annotations)
	}
	if got.Labels["app"] != "py" {
		t.Errorf("labels = %v, want the source's", got.Labels)
	}
	if got.Spec.NodeName != "node-b" {
		t.Errorf("nodeName = %q, want node-b, where the checkpoint lives", got.Spec.NodeName)
	}
	if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Name != "proxy" {
		t.Errorf("init containers = %v: want only the sidecar, which was running at the checkpoint", got.Spec.InitContainers)
	}
	if got.Status.Phase != "" {
		t.Errorf("status copied: %+v", got.Status)
	}
	got.Labels["app"] = "changed"
	got.Spec.Containers[0].Image = "changed"
	if src.Labels["app"] != "py" || src.Spec.Containers[0].Image != "python" || len(src.Spec.InitContainers) != 2 || src.Annotations[RestoreImageAnnotation] != "" {
		t.Errorf("RestoredPod changed its source: %+v", src)
	}
}

func TestShapeForFilesystemRestoreKeepsInitContainers(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "kubox-agent-init", Image: "agent"}},
		Containers:     []corev1.Container{{Name: "py", Image: "python"}},
	}}
	ShapeForFilesystemRestore(pod, "node-b", "/snapshots/team-a/s1/image")
	if pod.Annotations[RestoreImageAnnotation] != "/snapshots/team-a/s1/image" || pod.Spec.NodeName != "node-b" {
		t.Errorf("annotations %v on node %q: want the image, on node-b", pod.Annotations, pod.Spec.NodeName)
	}
	if len(pod.Spec.InitContainers) != 1 || len(pod.Spec.Containers) != 1 {
		t.Errorf("containers %v, init containers %v: a Pod started on a snapshot's files runs all of them", pod.Spec.Containers, pod.Spec.InitContainers)
	}
}
