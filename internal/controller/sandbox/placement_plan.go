package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
)

// This file is the restore planner: which node a Pod restoring from a snapshot is required on,
// whether that node's kubox-node fetches the snapshot first, or why the Pod must wait. It is a pure
// function of what was read (restoreInputs); it reads and calls nothing. What it cannot decide yet
// it names as the next read (a restoreStep), which the executor (placeRestore) performs and adds to
// the inputs before it asks again, so that nothing is read that the choice does not need: the
// other snapshot nodes only when the snapshot's node is ruled out, a node's Pods only once every
// other reason it could be ruled out is passed.

// restoreStep is what placing a restore does next.
type restoreStep int

const (
	// stepReadSnapshotNode: read the Node that took the snapshot (restorePlan.node).
	stepReadSnapshotNode restoreStep = iota
	// stepReadSnapshotNodes: list the Nodes labelled contract.SnapshotNodeLabel.
	stepReadSnapshotNodes
	// stepReadPods: list the Pods bound to restorePlan.node.
	stepReadPods
	// stepFetch: ask kubox-node on restorePlan.node (at restorePlan.ip) to make the snapshot
	// available there.
	stepFetch
	// stepWait: the Pod must not be created yet; restorePlan.why says why.
	stepWait
	// stepRequire: require the Pod on restorePlan.node, through the scheduler.
	stepRequire
)

// restoreInputs is what the planner decides from, as read so far.
type restoreInputs struct {
	pod    *corev1.Pod                  // the Pod to place, shaped to restore
	memory *sandboxv1beta1.MemoryStatus // the snapshot it restores from
	// nodeAPI is false when the controller has no kubox-node to ask (nodeapi.NotConfigured).
	nodeAPI bool
	// snapshotNode is the Node that took the snapshot, nil when it is gone; snapshotNodeRead says
	// whether it was read.
	snapshotNode     *corev1.Node
	snapshotNodeRead bool
	// labelled are the Nodes labelled contract.SnapshotNodeLabel, in any order; labelledRead says
	// whether they were listed.
	labelled     []corev1.Node
	labelledRead bool
	// pods are the Pods bound to each node, by node name, for the nodes whose Pods were listed.
	pods map[string][]corev1.Pod
	// fetch is kubox-node's answer to stepFetch, nil before it is asked.
	fetch *fetchAnswer
}

// fetchAnswer is what kubox-node on node answered a Fetch of the snapshot: whether it copied the
// snapshot from the snapshot store, or the call's error.
type fetchAnswer struct {
	node    string
	fetched bool
	err     error
}

// restorePlan is the planner's answer: the next step, and what the step needs.
type restorePlan struct {
	step restoreStep
	// node is the node to read, list the Pods of, fetch on or require; ip its InternalIP (stepFetch).
	node, ip string
	// why is, for stepWait, why the Pod waits (the Sandbox shows it); for stepFetch on another node
	// than the snapshot's, why not the snapshot's node.
	why string
	// fetched (stepRequire): node copied the snapshot from the store. unasked (stepRequire): the
	// error of a kubox-node that could not be asked, the Pod restoring from what its node holds.
	fetched bool
	unasked error
}

// planRestore is the next step of placing in.pod, which restores from in.memory: the snapshot's
// node when the Pod fits there (unfitNode, lacks), otherwise the first, by name, of the other
// labelled nodes with an InternalIP that it fits, whose kubox-node fetches the snapshot from the
// store; when no other node fits either, the snapshot's node still (the Pod waits there for the
// scheduler, which says why). The chosen node's kubox-node is asked for the snapshot before the Pod
// is required there (fetchOutcome). The Pod waits when the snapshot's node is gone and no other
// fits. Without kubox-node (not configured) the Pod is required on the snapshot's node and nothing
// is read: none would be asked for the snapshot, and the shim restores what that node has.
func planRestore(in *restoreInputs) restorePlan {
	if !in.nodeAPI {
		return restorePlan{step: stepRequire, node: in.memory.NodeName}
	}
	n, moved, next := chooseRestoreNode(in)
	if next != nil {
		return *next
	}
	if in.fetch == nil || in.fetch.node != n.Name {
		return restorePlan{step: stepFetch, node: n.Name, ip: nodeapi.InternalIP(n), why: moved}
	}
	return fetchOutcome(in.memory, in.fetch)
}

// chooseRestoreNode is the node in.pod is to restore on, with why not the snapshot's node when it
// is another; or the plan that must come first: a read, or the wait of a Pod no node can have.
func chooseRestoreNode(in *restoreInputs) (n *corev1.Node, moved string, next *restorePlan) {
	m := in.memory
	if !in.snapshotNodeRead {
		return nil, "", &restorePlan{step: stepReadSnapshotNode, node: m.NodeName}
	}
	moved = "is gone"
	if own := in.snapshotNode; own != nil {
		why, read := in.unfit(own)
		if read != nil || why == "" {
			return own, "", read
		}
		moved = why
	}
	if !in.labelledRead {
		return nil, "", &restorePlan{step: stepReadSnapshotNodes}
	}
	others := slices.Clone(in.labelled)
	slices.SortFunc(others, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for i := range others {
		o := &others[i]
		if o.Name == m.NodeName || nodeapi.InternalIP(o) == "" {
			continue
		}
		if why, read := in.unfit(o); read != nil || why == "" {
			return o, moved, read
		}
	}
	if in.snapshotNode != nil {
		return in.snapshotNode, "", nil
	}
	return nil, "", &restorePlan{step: stepWait, why: fmt.Sprintf(
		"node %s, which took snapshot %s, is gone, and no other node labelled %s=true is Ready and fits Pod %s",
		m.NodeName, m.Snapshot, contract.SnapshotNodeLabel, in.pod.Name)}
}

// unfit says why in.pod cannot run on n, or "" when it can; or, when that depends on the Pods
// bound to n and they were not listed yet, the plan that lists them.
func (in *restoreInputs) unfit(n *corev1.Node) (string, *restorePlan) {
	if why := unfitNode(in.pod, n); why != "" {
		return why, nil
	}
	pods, ok := in.pods[n.Name]
	if !ok {
		return "", &restorePlan{step: stepReadPods, node: n.Name}
	}
	return lacks(in.pod, n, pods), nil
}

// fetchOutcome is what follows kubox-node's answer f to a Fetch of the snapshot m: the Pod is
// required on f.node when the node has the snapshot, or when kubox-node there could not be asked
// (down, not installed) and f.node is the snapshot's own node, which the shim restores from as
// before there was a store. It waits when the snapshot is not on f.node yet (NotFound, Aborted: no
// store, or a copy in progress), or when f.node is another node, which cannot restore what it
// could not fetch.
func fetchOutcome(m *sandboxv1beta1.MemoryStatus, f *fetchAnswer) restorePlan {
	switch code := connect.CodeOf(f.err); {
	case f.err == nil:
		return restorePlan{step: stepRequire, node: f.node, fetched: f.fetched}
	case code == connect.CodeNotFound || code == connect.CodeAborted:
		return restorePlan{step: stepWait, node: f.node,
			why: fmt.Sprintf("snapshot %s is not available on node %s yet: %v", m.Snapshot, f.node, f.err)}
	case f.node != m.NodeName:
		return restorePlan{step: stepWait, node: f.node,
			why: fmt.Sprintf("snapshot %s could not be fetched to node %s: %v", m.Snapshot, f.node, f.err)}
	case errors.Is(f.err, nodeapi.ErrNotInstalled):
		return restorePlan{step: stepRequire, node: f.node}
	}
	return restorePlan{step: stepRequire, node: f.node, unasked: f.err}
}
