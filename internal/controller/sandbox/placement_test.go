package sandbox

import (
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// testNode is a node with an InternalIP, Ready or not, labelled for kubox-node or not.
func testNode(name, ip string, ready, labelled bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	if labelled {
		n.Labels = map[string]string{contract.SnapshotNodeLabel: "true"}
	}
	return n
}

// TestPlaceRestore: a restoring Pod goes to the snapshot's node once kubox-node there has it; to
// another Ready labelled node, which fetches it from the store, when that node is gone; and waits,
// saying why, when no node can have it.
func TestPlaceRestore(t *testing.T) {
	m := &sandboxv1beta1.MemoryStatus{Snapshot: "snap-uid", NodeName: "node-a", Image: "/snapshots/team-a/snap-uid/image"}
	for name, tc := range map[string]struct {
		nodes               []*corev1.Node
		fetchErr            error
		wantNode, wantFetch string
		wantWait            string
	}{
		"the snapshot's node": {nodes: []*corev1.Node{testNode("node-a", "192.0.2.10", true, true)},
			wantNode: "node-a", wantFetch: "192.0.2.10 team-a/snap-uid"},
		"its node is gone": {nodes: []*corev1.Node{testNode("node-0", "192.0.2.9", false, true), testNode("node-c", "192.0.2.12", true, false),
			testNode("node-b", "192.0.2.11", true, true)}, wantNode: "node-b", wantFetch: "192.0.2.11 team-a/snap-uid"},
		"its node is gone, no other": {nodes: []*corev1.Node{testNode("node-c", "192.0.2.12", true, false)},
			wantWait: "node node-a, which took snapshot snap-uid, is gone"},
		"not on the node, no store": {nodes: []*corev1.Node{testNode("node-a", "192.0.2.10", true, true)},
			fetchErr: connect.NewError(connect.CodeNotFound, errors.New("no snapshot store")), wantFetch: "192.0.2.10 team-a/snap-uid",
			wantWait: "snapshot snap-uid is not available on node node-a yet"},
		"kubox-node down": {nodes: []*corev1.Node{testNode("node-a", "192.0.2.10", true, true)},
			fetchErr: connect.NewError(connect.CodeUnavailable, errors.New("connection refused")), wantNode: "node-a", wantFetch: "192.0.2.10 team-a/snap-uid"},
	} {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testScheme(t))
			for _, n := range tc.nodes {
				b = b.WithObjects(n)
			}
			c := b.Build()
			nodes := &fakeNodes{fetchErr: tc.fetchErr, fetched: true}
			r := &Reconciler{client: c, apiReader: c, nodes: nodes}
			pod := testPod().Obj()
			checkpoint.ShapeForRestore(pod, m.NodeName, m.Image)
			why, err := r.placeRestore(t.Context(), "team-a", pod, m)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantWait != "" {
				if !strings.Contains(why, tc.wantWait) {
					t.Errorf("wait %q, want %q", why, tc.wantWait)
				}
			} else if why != "" || pod.Spec.NodeName != tc.wantNode {
				t.Errorf("wait %q, Pod on %q; want none, on %s", why, pod.Spec.NodeName, tc.wantNode)
			}
			if got := strings.Join(nodes.fetches, ","); got != tc.wantFetch {
				t.Errorf("fetches %q, want %q", got, tc.wantFetch)
			}
		})
	}
	// Without kubox-node configured, the Pod stays as shaped and nothing is asked.
	pod := testPod().Obj()
	checkpoint.ShapeForRestore(pod, m.NodeName, m.Image)
	if why, err := (&Reconciler{}).placeRestore(t.Context(), "team-a", pod, m); why != "" || err != nil || pod.Spec.NodeName != "node-a" {
		t.Errorf("no kubox-node: %q, %v, node %s; want the Pod on the snapshot's node", why, err, pod.Spec.NodeName)
	}
}
