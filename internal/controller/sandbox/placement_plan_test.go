package sandbox

import (
	"errors"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
)

// planned is a restorePlan as the tests compare it: the error by its message.
type planned struct {
	Step          restoreStep
	Node, IP, Why string
	Fetched       bool
	Unasked       string
}

func plannedOf(p restorePlan) planned {
	out := planned{Step: p.step, Node: p.node, IP: p.ip, Why: p.why, Fetched: p.fetched}
	if p.unasked != nil {
		out.Unasked = p.unasked.Error()
	}
	return out
}

func nodes(ns ...*corev1.Node) []corev1.Node {
	out := make([]corev1.Node, 0, len(ns))
	for _, n := range ns {
		out = append(out, *n)
	}
	return out
}

// TestPlanRestore is the restore planner on what was read: the cases of TestPlaceRestore (which
// drives it through the executor), each from the inputs the executor gathers, and the reads it
// asks for first, only those the choice needs.
func TestPlanRestore(t *testing.T) {
	m := &sandboxv1beta1.MemoryStatus{Snapshot: "snap-uid", NodeName: "node-a", Image: "/snapshots/team-a/snap-uid/image"}
	a, b := testNode("node-a", "192.0.2.10", true, true), testNode("node-b", "192.0.2.11", true, true)
	none := map[string][]corev1.Pod{"node-a": nil, "node-b": nil, "node-c": nil}
	refused := connect.NewError(connect.CodeUnavailable, errors.New("connection refused"))
	for name, tc := range map[string]struct {
		in   restoreInputs
		pod  func(*corev1.Pod)
		want planned
	}{
		"no kubox-node: the snapshot's node, nothing read": {in: restoreInputs{},
			want: planned{Step: stepRequire, Node: "node-a"}},
		"first the snapshot's node is read": {in: restoreInputs{nodeAPI: true},
			want: planned{Step: stepReadSnapshotNode, Node: "node-a"}},
		"then its Pods": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a},
			want: planned{Step: stepReadPods, Node: "node-a"}},
		"the snapshot's node fits: fetch there, the other nodes unread": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, pods: none},
			want: planned{Step: stepFetch, Node: "node-a", IP: "192.0.2.10"}},
		"the snapshot's node has it": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, pods: none,
			fetch: &fetchAnswer{node: "node-a"}}, want: planned{Step: stepRequire, Node: "node-a"}},
		"another node fetched it from the store": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, labelledRead: true, labelled: nodes(b), pods: none,
			fetch: &fetchAnswer{node: "node-b", fetched: true}}, want: planned{Step: stepRequire, Node: "node-b", Fetched: true}},
		"its node is gone: the labelled nodes are listed": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true},
			want: planned{Step: stepReadSnapshotNodes}},
		"its node is gone": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, labelledRead: true, pods: none,
			labelled: nodes(testNode("node-0", "192.0.2.9", false, true), b, testNode("node-c", "", true, true))},
			want: planned{Step: stepFetch, Node: "node-b", IP: "192.0.2.11", Why: "is gone"}},
		"its node is gone, no other": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, labelledRead: true, pods: none},
			want: planned{Step: stepWait, Why: "node node-a, which took snapshot snap-uid, is gone, and no other node labelled kubox.dev/gvisor-snapshots=true is Ready and fits Pod my-sandbox"}},
		"its node is tainted": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: testNode("node-a", "192.0.2.10", true, true, tainted),
			labelledRead: true, labelled: nodes(b), pods: none},
			want: planned{Step: stepFetch, Node: "node-b", IP: "192.0.2.11", Why: "has the taint dedicated=gpu:NoSchedule, which the Pod does not tolerate"}},
		"its node is tainted, the Pod tolerates it": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: testNode("node-a", "192.0.2.10", true, true, tainted), pods: none},
			pod: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			},
			want: planned{Step: stepFetch, Node: "node-a", IP: "192.0.2.10"}},
		"its node is cordoned": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: testNode("node-a", "192.0.2.10", true, true, cordoned),
			labelledRead: true, labelled: nodes(b), pods: none},
			want: planned{Step: stepFetch, Node: "node-b", IP: "192.0.2.11", Why: "is cordoned (spec.unschedulable)"}},
		"its node is not Ready": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: testNode("node-a", "192.0.2.10", false, true),
			labelledRead: true, labelled: nodes(b), pods: none},
			want: planned{Step: stepFetch, Node: "node-b", IP: "192.0.2.11", Why: "is not Ready"}},
		"its node is full": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, labelledRead: true, labelled: nodes(a, b),
			pods: map[string][]corev1.Pod{"node-a": {*busyPod("node-a", "3500m")}, "node-b": {*busyPod("node-b", "1")}}},
			want: planned{Step: stepFetch, Node: "node-b", IP: "192.0.2.11", Why: "has 500m of cpu free, less than the Pod's request of 1"}},
		"its node runs as many Pods as it allows": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true,
			snapshotNode: testNode("node-a", "192.0.2.10", true, true, func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1") }),
			labelledRead: true, labelled: nodes(b), pods: map[string][]corev1.Pod{"node-a": {*busyPod("node-a", "1")}, "node-b": nil}},
			want: planned{Step: stepFetch, Node: "node-b", IP: "192.0.2.11", Why: "runs 1 Pods, as many as it allows"}},
		"another node's Pods are read only once the snapshot's is ruled out": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true,
			snapshotNode: testNode("node-a", "192.0.2.10", true, true, cordoned), labelledRead: true, labelled: nodes(b), pods: map[string][]corev1.Pod{}},
			want: planned{Step: stepReadPods, Node: "node-b"}},
		"the Pod's own affinity rules out its node": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, labelledRead: true, pods: none,
			labelled: nodes(a, testNode("node-b", "192.0.2.11", true, true, func(n *corev1.Node) { n.Labels["zone"] = "z1" }))},
			pod:  func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "z1"} },
			want: planned{Step: stepFetch, Node: "node-b", IP: "192.0.2.11", Why: "does not match the Pod's node selector or required node affinity"}},
		"no node fits: it waits on the snapshot's node for the scheduler": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true,
			snapshotNode: testNode("node-a", "192.0.2.10", true, true, tainted), labelledRead: true, pods: none,
			labelled: nodes(testNode("node-b", "192.0.2.11", true, true, cordoned))},
			want: planned{Step: stepFetch, Node: "node-a", IP: "192.0.2.10"}},
		"not on the node, no store": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, pods: none,
			fetch: &fetchAnswer{node: "node-a", err: connect.NewError(connect.CodeNotFound, errors.New("no snapshot store"))}},
			want: planned{Step: stepWait, Node: "node-a", Why: "snapshot snap-uid is not available on node node-a yet: not_found: no snapshot store"}},
		"a copy in progress": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, pods: none,
			fetch: &fetchAnswer{node: "node-a", err: connect.NewError(connect.CodeAborted, errors.New("fetching"))}},
			want: planned{Step: stepWait, Node: "node-a", Why: "snapshot snap-uid is not available on node node-a yet: aborted: fetching"}},
		"kubox-node down": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, pods: none,
			fetch: &fetchAnswer{node: "node-a", err: refused}},
			want: planned{Step: stepRequire, Node: "node-a", Unasked: "unavailable: connection refused"}},
		"kubox-node not installed: restores quietly from what the node holds": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, snapshotNode: a, pods: none,
			fetch: &fetchAnswer{node: "node-a", err: nodeapi.ErrNotInstalled}},
			want: planned{Step: stepRequire, Node: "node-a"}},
		"kubox-node down on the node that must fetch": {in: restoreInputs{nodeAPI: true, snapshotNodeRead: true, labelledRead: true, labelled: nodes(b), pods: none,
			fetch: &fetchAnswer{node: "node-b", err: refused}},
			want: planned{Step: stepWait, Node: "node-b", Why: "snapshot snap-uid could not be fetched to node node-b: unavailable: connection refused"}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := testPod().Obj()
			pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			if tc.pod != nil {
				tc.pod(pod)
			}
			in := tc.in
			in.pod, in.memory = pod, m
			if diff := cmp.Diff(tc.want, plannedOf(planRestore(&in))); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
