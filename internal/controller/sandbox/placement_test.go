package sandbox

import (
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// testNode is a node with an InternalIP, Ready or not, labelled for kubox-node or not, with room
// for 4 CPUs and 10 Pods.
func testNode(name, ip string, ready, labelled bool, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	if labelled {
		n.Labels = map[string]string{contract.SnapshotNodeLabel: "true"}
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func tainted(n *corev1.Node) {
	n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

// busyPod is a Running Pod of another tenant that takes cpu of node.
func busyPod(node, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "busy-" + node},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// placementClient is a fake API server holding objs, with the Pod field selector on spec.nodeName
// the real one offers.
func placementClient(t *testing.T, objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, podNodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
}

// TestPlaceRestore: a restoring Pod is required (node affinity, never spec.nodeName) on the
// snapshot's node when it fits there and kubox-node there has the snapshot; on another Ready
// labelled node it fits, which fetches the snapshot from the store, when the snapshot's node is
// gone, NotReady, cordoned, tainted against it or full; on the snapshot's node still, to wait
// for the scheduler, when no node fits; and it waits, saying why, when no node can have it.
func TestPlaceRestore(t *testing.T) {
	m := &sandboxv1beta1.MemoryStatus{Snapshot: "snap-uid", NodeName: "node-a", Image: "/snapshots/team-a/snap-uid/image"}
	for name, tc := range map[string]struct {
		objs                []client.Object
		pod                 func(*corev1.Pod)
		fetchErr            error
		wantNode, wantFetch string
		wantWait            string
	}{
		"the snapshot's node": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true)},
			wantNode: "node-a", wantFetch: "192.0.2.10 team-a/snap-uid"},
		"its node is gone": {objs: []client.Object{testNode("node-0", "192.0.2.9", false, true), testNode("node-c", "192.0.2.12", true, false),
			testNode("node-b", "192.0.2.11", true, true)}, wantNode: "node-b", wantFetch: "192.0.2.11 team-a/snap-uid"},
		"its node is gone, no other": {objs: []client.Object{testNode("node-c", "192.0.2.12", true, false)},
			wantWait: "node node-a, which took snapshot snap-uid, is gone"},
		"its node is tainted": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true, tainted), testNode("node-b", "192.0.2.11", true, true)},
			wantNode: "node-b", wantFetch: "192.0.2.11 team-a/snap-uid"},
		"its node is tainted, the Pod tolerates it": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true, tainted), testNode("node-b", "192.0.2.11", true, true)},
			pod: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			},
			wantNode: "node-a", wantFetch: "192.0.2.10 team-a/snap-uid"},
		"its node is cordoned": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true, cordoned), testNode("node-b", "192.0.2.11", true, true)},
			wantNode: "node-b", wantFetch: "192.0.2.11 team-a/snap-uid"},
		"its node is not Ready": {objs: []client.Object{testNode("node-a", "192.0.2.10", false, true), testNode("node-b", "192.0.2.11", true, true)},
			wantNode: "node-b", wantFetch: "192.0.2.11 team-a/snap-uid"},
		"its node is full": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true), busyPod("node-a", "3500m"),
			testNode("node-b", "192.0.2.11", true, true), busyPod("node-b", "1")}, wantNode: "node-b", wantFetch: "192.0.2.11 team-a/snap-uid"},
		"the Pod's own affinity rules out its node": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true),
			testNode("node-b", "192.0.2.11", true, true, func(n *corev1.Node) { n.Labels["zone"] = "z1" })},
			pod:      func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "z1"} },
			wantNode: "node-b", wantFetch: "192.0.2.11 team-a/snap-uid"},
		"no node fits: it waits on the snapshot's node for the scheduler": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true, tainted),
			testNode("node-b", "192.0.2.11", true, true, cordoned), testNode("node-c", "192.0.2.12", true, false)},
			wantNode: "node-a", wantFetch: "192.0.2.10 team-a/snap-uid"},
		"not on the node, no store": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true)},
			fetchErr: connect.NewError(connect.CodeNotFound, errors.New("no snapshot store")), wantFetch: "192.0.2.10 team-a/snap-uid",
			wantWait: "snapshot snap-uid is not available on node node-a yet"},
		"kubox-node down": {objs: []client.Object{testNode("node-a", "192.0.2.10", true, true)},
			fetchErr: connect.NewError(connect.CodeUnavailable, errors.New("connection refused")), wantNode: "node-a", wantFetch: "192.0.2.10 team-a/snap-uid"},
		"kubox-node down on the node that must fetch": {objs: []client.Object{testNode("node-b", "192.0.2.11", true, true)},
			fetchErr: connect.NewError(connect.CodeUnavailable, errors.New("connection refused")), wantFetch: "192.0.2.11 team-a/snap-uid",
			wantWait: "snapshot snap-uid could not be fetched to node node-b"},
	} {
		t.Run(name, func(t *testing.T) {
			c := placementClient(t, tc.objs...)
			nodes := &fakeNodes{fetchErr: tc.fetchErr, fetched: true}
			r := &Reconciler{client: c, apiReader: c, nodes: nodes}
			pod := testPod().Obj()
			pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			if tc.pod != nil {
				tc.pod(pod)
			}
			checkpoint.ShapeForRestore(pod, m.Image)
			why, err := r.placeRestore(t.Context(), "team-a", pod, m)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantWait != "" {
				if !strings.Contains(why, tc.wantWait) {
					t.Errorf("wait %q, want %q", why, tc.wantWait)
				}
			} else if got := checkpoint.RequiredNode(pod); why != "" || got != tc.wantNode || pod.Spec.NodeName != "" {
				t.Errorf("wait %q, Pod required on %q with nodeName %q; want none, required on %s through the scheduler", why, got, pod.Spec.NodeName, tc.wantNode)
			}
			if got := strings.Join(nodes.fetches, ","); got != tc.wantFetch {
				t.Errorf("fetches %q, want %q", got, tc.wantFetch)
			}
		})
	}
	// Without kubox-node configured, the Pod is required on the snapshot's node and nothing is asked.
	pod := testPod().Obj()
	checkpoint.ShapeForRestore(pod, m.Image)
	if why, err := (&Reconciler{nodes: nodeapi.NotConfigured()}).placeRestore(t.Context(), "team-a", pod, m); why != "" || err != nil || checkpoint.RequiredNode(pod) != "node-a" || pod.Spec.NodeName != "" {
		t.Errorf("no kubox-node: %q, %v, nodeName %q, required %q; want the Pod required on the snapshot's node", why, err, pod.Spec.NodeName, checkpoint.RequiredNode(pod))
	}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	for name, tc := range map[string]struct {
		spec corev1.PodSpec
		want string
	}{
		"containers add up": {spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: cpu("1")}, {Resources: cpu("500m")}}}, want: "1500m"},
		"a larger init container": {spec: corev1.PodSpec{InitContainers: []corev1.Container{{Resources: cpu("3")}},
			Containers: []corev1.Container{{Resources: cpu("1")}}}, want: "3"},
		"sidecars run beside": {spec: corev1.PodSpec{InitContainers: []corev1.Container{{Resources: cpu("1"), RestartPolicy: &always}, {Resources: cpu("1")}},
			Containers: []corev1.Container{{Resources: cpu("1")}}}, want: "2"},
		"overhead": {spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: cpu("1")}},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}, want: "1250m"},
	} {
		t.Run(name, func(t *testing.T) {
			got := podRequests(&tc.spec)[corev1.ResourceCPU]
			if diff := cmp.Diff(tc.want, got.String()); diff != "" {
				t.Errorf("cpu request (-want +got):\n%s", diff)
			}
		})
	}
}
