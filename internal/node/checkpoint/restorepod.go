package checkpoint

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RestoredPod returns the Pod that continues from the checkpoint in dir: a copy of pod (the Pod
// the checkpoint was taken of, or one built from the same template) named name, bound to node,
// where the checkpoint lives, and annotated with its image (RestoreImageAnnotation) for the
// patched shim. The init containers that had finished before the checkpoint are left out: the
// image holds no process of theirs, a restore needs the checkpointed Pod's containers and no
// others, and their work (kubox-agent's binary in its emptyDir) comes back from the checkpoint's
// copy of the volume. A restartable init container (a sidecar) was running and stays. What the
// API server and the caller set (UID, owner references, status) is not copied.
func RestoredPod(pod *corev1.Pod, name, node, dir string) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pod.Namespace,
			Labels: maps.Clone(pod.Labels), Annotations: maps.Clone(pod.Annotations),
		},
		Spec: *pod.Spec.DeepCopy(),
	}
	ShapeForRestore(out, node, ImagePath(dir))
	return out
}

// ShapeForRestore makes pod, built like the Pod a checkpoint was taken of, restore from image on
// node (see RestoredPod).
func ShapeForRestore(pod *corev1.Pod, node, image string) {
	ShapeForFilesystemRestore(pod, node, image)
	var running []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			running = append(running, c)
		}
	}
	pod.Spec.InitContainers = running
}

// ShapeForFilesystemRestore makes pod start on node from the filesystem-only checkpoint image:
// the patched shim creates the Pod's sandbox with the image's root filesystems, and every
// container, init containers too, starts afresh on them. Nothing else of the Pod changes.
func ShapeForFilesystemRestore(pod *corev1.Pod, node, image string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[RestoreImageAnnotation] = image
	pod.Spec.NodeName = node
}
