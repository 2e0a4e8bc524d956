package sandboxsnapshot

import (
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestStatusNodesListsFetchedCopies: a Sandbox that starts from a stored SandboxSnapshot on
// another node than the one that took it has that node's kubox-node fetch the snapshot from the
// store first; once its Pod is bound there, status.nodes lists that node too. A node that is
// gone (its copy went with it) is dropped.
func TestStatusNodesListsFetchedCopies(t *testing.T) {
	t.Parallel()
	ns, n := env.NewNamespace(t), startKuboxNode(t)
	startController(t, n, ns)
	a, b := ns+"-a", ns+"-b"
	node(t, a)
	node(t, b)
	s := create(t, makeSnapshot(ns, "snap", "src").withFinalizer(), a, "", true)
	setNodes(t, s, a) // as the controller records the checkpoint's answer
	fetched := n.signedInStore(t, ns, string(s.UID))

	// The Sandbox may run on b only: b's kubox-node fetches the snapshot from the store.
	sb := testutil.MakeSandbox("fork", ns).Obj()
	sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "snap"}
	sb.Spec.PodTemplate.Spec.Affinity = onlyOn(b)
	env.Create(t, sb)
	pod := framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fork"}},
		func(p *corev1.Pod) (bool, string) {
			return p.Annotations[contract.RestoreImageAnnotation] != "", "annotations " + cmp.Diff(nil, p.Annotations)
		})
	if _, err := os.Stat(fetched); err != nil {
		t.Fatalf("the restoring Pod was created before node %s fetched the snapshot: %v", b, err)
	}
	env.BindPod(t, ns, pod.Name, b)
	waitForNodes(t, s, []string{a, b})

	// Node a is gone, and its copy with it: the next pass drops it (every copiesRecheck; here a
	// change to the SandboxSnapshot brings the pass on).
	if err := env.Client.Delete(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a}}); err != nil {
		t.Fatal(err)
	}
	touch(t, s)
	waitForNodes(t, s, []string{b})
}

// TestStatusNodesIgnoresPodsThatDoNotRestoreIt performs the attack of a tenant who makes a Pod
// look like a restore of someone's snapshot: the restore annotation with the snapshot's image, on
// a node of its choosing, but not the Pod of a Sandbox that starts from the snapshot (a Pod of its
// own, and the Pod of a Sandbox with no spec.snapshotRef). status.nodes does not list their
// nodes; the Pod of a Sandbox that does start from it is listed, so the controller did look.
func TestStatusNodesIgnoresPodsThatDoNotRestoreIt(t *testing.T) {
	t.Parallel()
	ns, n := env.NewNamespace(t), startKuboxNode(t)
	startController(t, n, ns)
	a, b, c := ns+"-a", ns+"-b", ns+"-c"
	for _, name := range []string{a, b, c} {
		node(t, name)
	}
	s := create(t, makeSnapshot(ns, "snap", "src").withFinalizer(), a, "", true)
	setNodes(t, s, a)
	n.signedInStore(t, ns, string(s.UID))
	image := s.Status.Snapshot.Image

	// A Pod of the tenant's own, labelled as kubox's Pods are, bound to b.
	own := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lookalike",
		Labels:      map[string]string{sandboxv1beta1.SandboxNameHashLabel: "0123abcd"},
		Annotations: map[string]string{contract.RestoreImageAnnotation: image}},
		Spec: corev1.PodSpec{NodeName: b, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	env.Create(t, own)
	// A Sandbox with no snapshotRef, whose Pod the tenant annotates and which is bound to b.
	plain := testutil.MakeSandbox("plain", ns).Obj()
	env.Create(t, plain)
	framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}, nil)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "plain"}, p); err != nil {
			return err
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[contract.RestoreImageAnnotation] = image
		return env.Client.Update(t.Context(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
	env.BindPod(t, ns, "plain", b)

	// The real restore, on c.
	sb := testutil.MakeSandbox("fork", ns).Obj()
	sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "snap"}
	sb.Spec.PodTemplate.Spec.Affinity = onlyOn(c)
	env.Create(t, sb)
	framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fork"}},
		func(p *corev1.Pod) (bool, string) {
			return p.Annotations[contract.RestoreImageAnnotation] != "", "no restore annotation"
		})
	env.BindPod(t, ns, "fork", c)
	waitForNodes(t, s, []string{a, c})
}

// touch changes an annotation of the snapshot, which brings on a pass of the controller.
func touch(t *testing.T, s *extv1beta1.SandboxSnapshot) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations["test.kubox.dev/touched"] = metav1.Now().String()
		return env.Client.Update(t.Context(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// onlyOn is a required node affinity for node alone.
func onlyOn(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
}

// setNodes writes status.nodes of the snapshot.
func setNodes(t *testing.T, s *extv1beta1.SandboxSnapshot, nodes ...string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		s.Status.Nodes = nodes
		return env.Client.Status().Update(t.Context(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitForNodes waits until status.nodes of the snapshot is want (in any order).
func waitForNodes(t *testing.T, s *extv1beta1.SandboxSnapshot, want []string) {
	t.Helper()
	slices.Sort(want)
	framework.WaitForObject(t, env, &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}},
		func(got *extv1beta1.SandboxSnapshot) (bool, string) {
			nodes := slices.Sorted(slices.Values(got.Status.Nodes))
			return slices.Equal(want, nodes), "status.nodes (-want +got):\n" + cmp.Diff(want, nodes)
		})
}
