package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// placeRestore chooses the node a Pod shaped to restore from the snapshot m runs on (restoreNode),
// makes the snapshot available there, and requires the Pod on it through the scheduler
// (checkpoint.RequireNode: node affinity, never spec.nodeName, so the node's taints, cordon and
// free resources and the Pod's own affinity still apply, and a Pod that does not fit stays
// Pending with the scheduler's reason in PodScheduled). It returns why the Pod must wait (the
// snapshot is on no reachable node), or "". Without kubox-node (not configured), or when it
// cannot be asked (down, not installed), the Pod is required on the snapshot's node: the shim
// restores what that node has, as before there was a store.
func (r *Reconciler) placeRestore(ctx context.Context, ns string, pod *corev1.Pod, m *sandboxv1beta1.MemoryStatus) (string, error) {
	if nodeapi.Configured(r.nodes) != nil {
		checkpoint.RequireNode(pod, m.NodeName) // no node is read: none would be asked for the snapshot
		return "", nil
	}
	node, ip, why, err := r.restoreNode(ctx, pod, m)
	if err != nil || why != "" {
		return why, err
	}
	res, err := r.nodes.Fetch(ctx, ip, ns, m.Snapshot)
	switch code := connect.CodeOf(err); {
	case err == nil:
		if res.GetFetched() {
			ctrl.LoggerFrom(ctx).Info("Fetched the snapshot from the snapshot store", "snapshot", m.Snapshot, "node", node, "pod", pod.Name)
		}
	case code == connect.CodeNotFound || code == connect.CodeAborted:
		return fmt.Sprintf("snapshot %s is not available on node %s yet: %v", m.Snapshot, node, err), nil
	case node != m.NodeName:
		return fmt.Sprintf("snapshot %s could not be fetched to node %s: %v", m.Snapshot, node, err), nil
	default:
		if !errors.Is(err, nodeapi.ErrNotInstalled) {
			ctrl.LoggerFrom(ctx).Error(err, "kubox-node could not be asked for the snapshot; restoring from what the node holds",
				"snapshot", m.Snapshot, "node", node)
		}
	}
	checkpoint.RequireNode(pod, node)
	return "", nil
}

// restoreNode chooses where a Pod restoring from m runs, with the node's InternalIP: the
// snapshot's own node when the Pod fits there (unfit), otherwise the first, by name, of the
// other nodes labelled contract.SnapshotNodeLabel that it fits, whose kubox-node fetches the
// snapshot from its snapshot store. When no other node fits either, the snapshot's node still:
// the Pod waits there for the scheduler, which says why. It returns why the Pod must wait
// instead when the snapshot's node is gone and no other node fits.
func (r *Reconciler) restoreNode(ctx context.Context, pod *corev1.Pod, m *sandboxv1beta1.MemoryStatus) (name, ip, why string, err error) {
	own := &corev1.Node{}
	switch err := r.apiReader.Get(ctx, client.ObjectKey{Name: m.NodeName}, own); {
	case apierrors.IsNotFound(err):
		own = nil
	case err != nil:
		return "", "", "", fmt.Errorf("reading node %s, which took snapshot %s: %w", m.NodeName, m.Snapshot, err)
	}
	ownUnfit := "is gone"
	if own != nil {
		if ownUnfit, err = r.unfit(ctx, pod, own); err != nil || ownUnfit == "" {
			return own.Name, nodeapi.InternalIP(own), "", err
		}
	}
	other, err := r.otherSnapshotNode(ctx, pod, m.NodeName)
	switch {
	case err != nil:
		return "", "", "", err
	case other != nil:
		ctrl.LoggerFrom(ctx).Info("Restoring on another node, which fetches the snapshot", "snapshot", m.Snapshot,
			"snapshotNode", m.NodeName, "why", ownUnfit, "node", other.Name, "pod", pod.Name)
		return other.Name, nodeapi.InternalIP(other), "", nil
	case own != nil:
		return own.Name, nodeapi.InternalIP(own), "", nil
	}
	return "", "", fmt.Sprintf("node %s, which took snapshot %s, is gone, and no other node labelled %s=true is Ready and fits Pod %s",
		m.NodeName, m.Snapshot, contract.SnapshotNodeLabel, pod.Name), nil
}

// otherSnapshotNode is the first, by name, of the nodes labelled contract.SnapshotNodeLabel, other
// than except, that have an InternalIP and that the Pod fits (unfit); nil when there is none.
func (r *Reconciler) otherSnapshotNode(ctx context.Context, pod *corev1.Pod, except string) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := r.apiReader.List(ctx, nodes, client.MatchingLabels{contract.SnapshotNodeLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing the nodes labelled %s: %w", contract.SnapshotNodeLabel, err)
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Name == except || nodeapi.InternalIP(n) == "" {
			continue
		}
		why, err := r.unfit(ctx, pod, n)
		if err != nil {
			return nil, err
		}
		if why == "" {
			return n, nil
		}
	}
	return nil, nil
}
