package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
)

// placeRestore makes the snapshot m available on the node a Pod shaped to restore from it will run
// on, and moves the Pod there: the snapshot's own node while that Node exists, otherwise another
// Ready node labelled contract.SnapshotNodeLabel, whose kubox-node fetches the snapshot from its
// snapshot store. It returns why the Pod must wait (the snapshot is on no reachable node), or "".
// A kubox-node that cannot be asked (down, not installed) leaves the Pod on the snapshot's node:
// the shim restores what that node has, as before there was a store.
func (r *Reconciler) placeRestore(ctx context.Context, ns string, pod *corev1.Pod, m *sandboxv1beta1.MemoryStatus) (string, error) {
	if r.nodes == nil {
		return "", nil
	}
	node := m.NodeName
	ip, found, err := nodeapi.NodeIP(ctx, r.apiReader, node)
	if err != nil {
		return "", err
	}
	if !found {
		if node, ip, err = r.otherSnapshotNode(ctx); err != nil || node == "" {
			return fmt.Sprintf("node %s, which took snapshot %s, is gone, and no other node is Ready and labelled %s=true",
				m.NodeName, m.Snapshot, contract.SnapshotNodeLabel), err
		}
	}
	res, err := r.nodes.Fetch(ctx, ip, ns, m.Snapshot)
	switch code := connect.CodeOf(err); {
	case err == nil:
		if res.GetFetched() {
			ctrl.LoggerFrom(ctx).Info("Fetched the snapshot from the snapshot store", "snapshot", m.Snapshot, "node", node, "pod", pod.Name)
		}
	case code == connect.CodeNotFound || code == connect.CodeAborted:
		return fmt.Sprintf("snapshot %s is not available on node %s yet: %v", m.Snapshot, node, err), nil
	case !found:
		return fmt.Sprintf("snapshot %s could not be fetched to node %s: %v", m.Snapshot, node, err), nil
	default:
		if !errors.Is(err, nodeapi.ErrNotInstalled) {
			ctrl.LoggerFrom(ctx).Error(err, "kubox-node could not be asked for the snapshot; restoring from what the node holds",
				"snapshot", m.Snapshot, "node", node)
		}
	}
	pod.Spec.NodeName = node
	return "", nil
}

// otherSnapshotNode is the first, by name, of the Ready, schedulable nodes labelled
// contract.SnapshotNodeLabel, with its InternalIP; "" when there is none.
func (r *Reconciler) otherSnapshotNode(ctx context.Context) (name, ip string, err error) {
	nodes := &corev1.NodeList{}
	if err := r.apiReader.List(ctx, nodes, client.MatchingLabels{contract.SnapshotNodeLabel: "true"}); err != nil {
		return "", "", fmt.Errorf("listing the nodes labelled %s: %w", contract.SnapshotNodeLabel, err)
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes.Items {
		if ip := nodeapi.InternalIP(&n); ip != "" && !n.Spec.Unschedulable && nodeReady(&n) {
			return n.Name, ip, nil
		}
	}
	return "", "", nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
