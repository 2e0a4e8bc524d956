package checkpoint

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/api/contract"
)

// RestoredPod returns the Pod that continues from the checkpoint in dir: a copy of pod (the Pod
// the checkpoint was taken of, or one built from the same template) named name, required on
// node, where the checkpoint lives (RequireNode), and annotated with its image
// (contract.RestoreImageAnnotation) for the patched shim. The init containers that had finished before
// the checkpoint are left out: the image holds no process of theirs, a restore needs the
// checkpointed Pod's containers and no others, and their work (kubox-agent's binary in its
// emptyDir) comes back from the checkpoint's copy of the volume. A restartable init container (a
// sidecar) was running and stays. What the API server and the caller set (UID, owner
// references, status) is not copied.
func RestoredPod(pod *corev1.Pod, name, node, dir string) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pod.Namespace,
			Labels: maps.Clone(pod.Labels), Annotations: maps.Clone(pod.Annotations),
		},
		Spec: *pod.Spec.DeepCopy(),
	}
	ShapeForRestore(out, ImagePath(dir))
	RequireNode(out, node)
	return out
}

// ShapeForRestore makes pod, built like the Pod a checkpoint was taken of, restore from image
// (see RestoredPod). Where it runs is RequireNode's.
func ShapeForRestore(pod *corev1.Pod, image string) {
	ShapeForFilesystemRestore(pod, image)
	var running []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			running = append(running, c)
		}
	}
	pod.Spec.InitContainers = running
}

// ShapeForFilesystemRestore makes pod start from the filesystem-only checkpoint image: the
// patched shim creates the Pod's sandbox with the image's root filesystems, and every container,
// init containers too, starts afresh on them. Nothing else of the Pod changes; where it runs is
// RequireNode's.
func ShapeForFilesystemRestore(pod *corev1.Pod, image string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[contract.RestoreImageAnnotation] = image
}

// RequireNode makes pod run on node or nowhere, through the scheduler: it clears spec.nodeName
// (which would bind the Pod past the scheduler: past the node's taints, cordon and free
// resources) and requires node by node affinity, a matchFields metadata.name In [node]
// requirement added to every required term the Pod has (the terms are ORed, so the requirement
// is ANDed with each; a term that matches no node, an empty one, stays as it is) or one term of
// its own when it has none. The Pod's node selector, preferred affinity and tolerations are
// kept: a node that does not fit leaves the Pod Pending, with the scheduler's reason in its
// PodScheduled condition.
func RequireNode(pod *corev1.Pod, node string) {
	pod.Spec.NodeName = ""
	on := corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	sel := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(sel.NodeSelectorTerms) == 0 {
		sel.NodeSelectorTerms = []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{on}}}
		return
	}
	for i := range sel.NodeSelectorTerms {
		t := &sel.NodeSelectorTerms[i]
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue // matches no node; with the requirement it would match node
		}
		if !slices.ContainsFunc(t.MatchFields, func(r corev1.NodeSelectorRequirement) bool { return equalRequirement(r, on) }) {
			t.MatchFields = append(t.MatchFields, on)
		}
	}
}

func equalRequirement(a, b corev1.NodeSelectorRequirement) bool {
	return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
}

// RequiredNode returns the node RequireNode required pod on, or "" when it did not: the value of
// a matchFields metadata.name In requirement that every required term of the Pod's carries.
func RequiredNode(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	node := ""
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		i := slices.IndexFunc(t.MatchFields, func(r corev1.NodeSelectorRequirement) bool {
			return r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1
		})
		switch {
		case len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0:
			continue
		case i < 0 || node != "" && t.MatchFields[i].Values[0] != node:
			return ""
		}
		node = t.MatchFields[i].Values[0]
	}
	return node
}
