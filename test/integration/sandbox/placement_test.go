package sandbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestRestoreGoesThroughTheScheduler is the attack of issue #36 hole 11: a Sandbox restores from a
// snapshot taken on a node it may not use (tainted NoSchedule against it, or cordoned). Bound
// with spec.nodeName, its Pod would skip the scheduler and run there anyway, past the taint, the
// cordon and the node's free resources. The Pod has no spec.nodeName at creation; it is required
// on the snapshot's node by node affinity, ANDed with the Sandbox's own required affinity, which is
// kept; left Pending by the scheduler, the Sandbox shows the scheduler's reason (PodScheduled) and
// is not failed as a restore that did not start.
func TestRestoreGoesThroughTheScheduler(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*corev1.Node){
		"tainted": func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "team-b", Effect: corev1.TaintEffectNoSchedule}}
		},
		"cordoned": func(n *corev1.Node) { n.Spec.Unschedulable = true },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := startController(t)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}}
			mutate(node)
			env.Create(t, node)
			t.Cleanup(func() { _ = env.Client.Delete(t.Context(), node) })
			snapshotOn(t, ns, "warm", node.Name)

			zone := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}
			sb := testutil.MakeSandbox("fork", ns).Obj()
			sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "warm"}
			sb.Spec.PodTemplate.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{zone}}}}}}
			env.Create(t, sb)

			pod := waitForPod(t, ns, "fork")
			if pod.Spec.NodeName != "" {
				t.Fatalf("the restoring Pod was bound to node %q at creation, past the scheduler", pod.Spec.NodeName)
			}
			want := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{zone},
				MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node.Name}}},
			}}}
			var got *corev1.NodeSelector
			if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
				got = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("required node affinity (-want +got):\n%s", diff)
			}

			// The scheduler leaves it Pending and says why; the Sandbox shows it.
			why := fmt.Sprintf("0/1 nodes are available: 1 node(s) %s.", map[string]string{
				"tainted": "had untolerated taint {dedicated: team-b}", "cordoned": "were unschedulable"}[name])
			env.UpdatePodStatus(t, ns, "fork", func(st *corev1.PodStatus) {
				st.Phase = corev1.PodPending
				framework.SetPodCondition(st, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable, Message: why, LastTransitionTime: metav1.Now()})
			})
			waitForConditions(t, ns, "fork", scheduledCond(metav1.ConditionFalse, corev1.PodReasonUnschedulable, why))
		})
	}
}

// snapshotOn creates the SandboxSnapshot name and writes the status a snapshot taken on node has
// (there is no kubox-node here); the SandboxSnapshot controller may be writing it too.
func snapshotOn(t *testing.T, ns, name, node string) {
	t.Helper()
	env.Create(t, &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "origin"}}})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		snap := &extv1beta1.SandboxSnapshot{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, snap); err != nil {
			return err
		}
		snap.Status = extv1beta1.SandboxSnapshotStatus{
			Conditions: []metav1.Condition{{Type: extv1beta1.SnapshotConditionReady, Status: metav1.ConditionTrue,
				Reason: extv1beta1.SnapshotReasonTaken, Message: "taken", LastTransitionTime: metav1.Now()}},
			Snapshot: &sandboxv1beta1.MemoryStatus{Snapshot: "snap-uid", NodeName: node, Image: "/snapshots/" + ns + "/snap-uid/image",
				SizeBytes: 1 << 20, Duration: &metav1.Duration{Duration: time.Second}},
		}
		return env.Client.Status().Update(t.Context(), snap)
	})
	if err != nil {
		t.Fatalf("Writing the status of SandboxSnapshot %s: %v", name, err)
	}
}
