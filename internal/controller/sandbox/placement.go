package sandbox

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// This file is the executor of the restore planner (placement_plan.go): it performs the reads and
// the kubox-node call the planner asks for, and applies its plan. It decides nothing.

// nodeAPI reports whether the controller can ask kubox-node (it is not nodeapi.NotConfigured): the
// one place the reconciler knows that kubox-node may be absent. The planners take its answer as an
// input; every other call lets the NotConfigured client answer nodeapi.ErrNotConfigured.
func (r *Reconciler) nodeAPI() bool { return nodeapi.Configured(r.nodes) == nil }

// placeRestore places a Pod shaped to restore from the snapshot m (planRestore): it makes the
// snapshot available on the chosen node and requires the Pod there through the scheduler
// (checkpoint.RequireNode: node affinity, never spec.nodeName, so the node's taints, cordon and
// free resources and the Pod's own affinity still apply, and a Pod that does not fit stays
// Pending with the scheduler's reason in PodScheduled). It returns why the Pod must wait, or "".
func (r *Reconciler) placeRestore(ctx context.Context, ns string, pod *corev1.Pod, m *sandboxv1beta1.MemoryStatus) (string, error) {
	in := &restoreInputs{pod: pod, memory: m, nodeAPI: r.nodeAPI(), pods: map[string][]corev1.Pod{}}
	// Each step adds an input the planner asks for once: two node reads, the Pods of each node,
	// one fetch, then the plan.
	for steps := 0; steps <= 5+len(in.labelled); steps++ {
		p := planRestore(in)
		switch p.step {
		case stepWait:
			return p.why, nil
		case stepRequire:
			r.logRestore(ctx, pod, m, p)
			checkpoint.RequireNode(pod, p.node)
			return "", nil
		}
		if err := r.readForRestore(ctx, ns, in, p); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("placing Pod %s, which restores snapshot %s: the planner did not decide after every read", pod.Name, m.Snapshot)
}

// readForRestore performs the read or call of step p and records what it found in in.
func (r *Reconciler) readForRestore(ctx context.Context, ns string, in *restoreInputs, p restorePlan) error {
	m := in.memory
	switch p.step {
	case stepReadSnapshotNode:
		n := &corev1.Node{}
		switch err := r.apiReader.Get(ctx, client.ObjectKey{Name: p.node}, n); {
		case apierrors.IsNotFound(err):
			n = nil
		case err != nil:
			return fmt.Errorf("reading node %s, which took snapshot %s: %w", p.node, m.Snapshot, err)
		}
		in.snapshotNode, in.snapshotNodeRead = n, true
	case stepReadSnapshotNodes:
		nodes := &corev1.NodeList{}
		if err := r.apiReader.List(ctx, nodes, client.MatchingLabels{contract.SnapshotNodeLabel: "true"}); err != nil {
			return fmt.Errorf("listing the nodes labelled %s: %w", contract.SnapshotNodeLabel, err)
		}
		in.labelled, in.labelledRead = nodes.Items, true
	case stepReadPods:
		pods := &corev1.PodList{}
		if err := r.apiReader.List(ctx, pods, client.MatchingFields{podNodeNameField: p.node}); err != nil {
			return fmt.Errorf("listing the Pods on node %s: %w", p.node, err)
		}
		in.pods[p.node] = pods.Items
	case stepFetch:
		if p.why != "" {
			ctrl.LoggerFrom(ctx).Info("Restoring on another node, which fetches the snapshot", "snapshot", m.Snapshot,
				"snapshotNode", m.NodeName, "why", p.why, "node", p.node, "pod", in.pod.Name)
		}
		res, err := r.nodes.Fetch(ctx, p.ip, ns, m.Snapshot)
		in.fetch = &fetchAnswer{node: p.node, fetched: res.GetFetched(), err: err}
	}
	return nil
}

// logRestore logs what placing the Pod on p.node did with kubox-node: fetched the snapshot from
// the store, or could not ask it and restores from what the node holds.
func (r *Reconciler) logRestore(ctx context.Context, pod *corev1.Pod, m *sandboxv1beta1.MemoryStatus, p restorePlan) {
	switch log := ctrl.LoggerFrom(ctx); {
	case p.fetched:
		log.Info("Fetched the snapshot from the snapshot store", "snapshot", m.Snapshot, "node", p.node, "pod", pod.Name)
	case p.unasked != nil:
		log.Error(p.unasked, "kubox-node could not be asked for the snapshot; restoring from what the node holds",
			"snapshot", m.Snapshot, "node", p.node)
	}
}
