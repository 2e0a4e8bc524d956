package sandboxsnapshot

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/status"
)

// This file keeps status.nodes: the nodes that hold a copy of the snapshot. The node that took it
// is recorded from kubox-node's answer to the checkpoint (take). A node that fetched a copy from
// the snapshot store is recorded from the Pods that start from the snapshot: the Sandbox
// controller requires such a Pod on a node other than the snapshot's only after that node's
// kubox-node answered the fetch (internal/controller/sandbox, placement.go), so the node a Pod of
// a Sandbox whose spec.snapshotRef names the snapshot is bound to holds a copy. A copy stays on
// its node for as long as the snapshot exists (kubox-node's sweep removes it once the store no
// longer holds it), so a node stays listed after its Pod is gone, until the Node itself is gone,
// and its copy with it. status.nodes records what was seen, like status.snapshot: a copy made in
// an earlier pass is not seen again.

// maxNodes is status.nodes' MaxItems.
const maxNodes = 64

// copiesRecheck is how often a Ready snapshot is looked at again for the nodes of status.nodes
// that are gone: the controller does not watch Nodes (it reads them uncached).
const copiesRecheck = 10 * time.Minute

// recheckCopies is when a Ready snapshot whose retention looks at it again after next (zero:
// never) is looked at again: copiesRecheck at the latest.
func recheckCopies(next time.Duration) time.Duration {
	if next <= 0 || next > copiesRecheck {
		return copiesRecheck
	}
	return next
}

// recordCopies writes status.nodes of the Ready snapshot snap when it changed (copies), and has
// it looked at again after next (its retention's), or copiesRecheck at the latest while it lists
// a node.
func (r *Reconciler) recordCopies(ctx context.Context, snap *extv1beta1.SandboxSnapshot, next time.Duration) (ctrl.Result, error) {
	if err := r.copies(ctx, snap); err != nil {
		return ctrl.Result{}, err
	}
	if len(snap.Status.Nodes) > 0 {
		next = recheckCopies(next)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// copies writes status.nodes of the Ready snapshot snap when it changed: the nodes it lists that
// still exist, and those of the Pods restored from it (restoredOn).
func (r *Reconciler) copies(ctx context.Context, snap *extv1beta1.SandboxSnapshot) error {
	s := snap.Status.Snapshot
	if s == nil || s.Image == "" {
		return nil
	}
	restored, err := r.restoredOn(ctx, snap, s.Image)
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	for _, name := range append(slices.Clone(snap.Status.Nodes), restored...) {
		if _, seen := gone[name]; seen {
			continue
		}
		switch err := r.apiReader.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}); {
		case apierrors.IsNotFound(err):
			gone[name] = true
		case err != nil:
			return fmt.Errorf("reading node %s, which holds a copy of SandboxSnapshot %s: %w", name, snap.Name, err)
		default:
			gone[name] = false
		}
	}
	nodes := copyNodes(snap.Status.Nodes, restored, gone)
	if slices.Equal(nodes, snap.Status.Nodes) {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("Nodes holding a copy of the snapshot changed", "nodes", nodes, "was", snap.Status.Nodes)
	want := *snap.Status.DeepCopy()
	want.Nodes = nodes
	_, err = status.WriteNow(ctx, r.status, snap, &snap.Status, want)
	return err
}

// copyNodes is status.nodes from the nodes recorded so far and the nodes of the Pods restored
// from the snapshot, without the nodes that are gone: sorted, each once, at most maxNodes (those
// recorded first: they were seen first).
func copyNodes(recorded, restored []string, gone map[string]bool) []string {
	var out []string
	for _, n := range append(slices.Clone(recorded), restored...) {
		if n == "" || gone[n] || slices.Contains(out, n) || len(out) == maxNodes {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// restoredOn returns the nodes that the Pods restored from snap (its image, in its namespace) are
// bound to, counting only the Pod of a Sandbox whose spec.snapshotRef names snap (startsFrom):
// anyone who may create a Pod can give it the annotation and a node.
func (r *Reconciler) restoredOn(ctx context.Context, snap *extv1beta1.SandboxSnapshot, image string) ([]string, error) {
	pods := &corev1.PodList{}
	if err := r.client.List(ctx, pods, client.InNamespace(snap.Namespace), client.MatchingFields{indexer.RestoreImageKey: image}); err != nil {
		return nil, fmt.Errorf("listing the Pods restored from SandboxSnapshot %s: %w", snap.Name, err)
	}
	var nodes []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" {
			continue
		}
		ref, err := r.startsFrom(ctx, p)
		if err != nil {
			return nil, err
		}
		if ref == snap.Name {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	return nodes, nil
}

// startsFrom is the SandboxSnapshot that pod starts from: the spec.snapshotRef of the Sandbox
// that controls it (the UID of its controller reference, and the Pod name the Sandbox gives its
// Pod), or "" for a Pod that is not such a Sandbox's.
func (r *Reconciler) startsFrom(ctx context.Context, pod *corev1.Pod) (string, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "Sandbox" || ref.APIVersion != sandboxv1beta1.GroupVersion.String() {
		return "", nil
	}
	sb := &sandboxv1beta1.Sandbox{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, sb); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading Sandbox %s, which controls Pod %s: %w", ref.Name, pod.Name, err)
	}
	podName := sb.Annotations[sandboxv1beta1.PodNameAnnotation]
	if podName == "" {
		podName = sb.Name
	}
	if sb.UID != ref.UID || pod.Name != podName || sb.Spec.SnapshotRef == nil {
		return "", nil
	}
	return sb.Spec.SnapshotRef.Name, nil
}

// restoredFrom maps a Pod restoring from a snapshot to the SandboxSnapshot it starts from, whose
// status.nodes may gain its node.
func (r *Reconciler) restoredFrom(ctx context.Context, obj client.Object) []ctrl.Request {
	pod, ok := obj.(*corev1.Pod)
	if !ok || indexer.RestoreImage(pod) == nil || pod.Spec.NodeName == "" {
		return nil
	}
	name, err := r.startsFrom(ctx, pod)
	if err != nil || name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: pod.Namespace, Name: name}}}
}
