package sandbox

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestSandboxStartsFromASnapshot: a Sandbox whose spec.snapshotRef names a Ready SandboxSnapshot
// gets a Pod shaped to restore from it, required on its node; when the runtime cannot restore it (a
// StartError), the Sandbox says so with RestoreFailed and what a snapshot needs, and the Pod is
// left for the kubelet.
func TestSandboxStartsFromASnapshot(t *testing.T) {
	t.Parallel()
	ns := startController(t)
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm"},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "origin"}}}
	env.Create(t, snap)
	snap.Status = extv1beta1.SandboxSnapshotStatus{
		Conditions: []metav1.Condition{{Type: extv1beta1.SnapshotConditionReady, Status: metav1.ConditionTrue,
			Reason: extv1beta1.SnapshotReasonTaken, Message: "taken", LastTransitionTime: metav1.Now()}},
		Snapshot: &sandboxv1beta1.MemoryStatus{Snapshot: "snap-uid", NodeName: "node-b", Image: "/snapshots/" + ns + "/snap-uid/image",
			SizeBytes: 1 << 20, Duration: &metav1.Duration{Duration: time.Second}},
	}
	if err := env.Client.Status().Update(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	sb := testutil.MakeSandbox("fork", ns).Obj()
	sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "warm"}
	env.Create(t, sb)

	pod := waitForPod(t, ns, "fork")
	if pod.Annotations[contract.RestoreImageAnnotation] != snap.Status.Snapshot.Image || checkpoint.RequiredNode(pod) != "node-b" || pod.Spec.NodeName != "" {
		t.Fatalf("Pod annotations %v, nodeName %q, required node %q; want the snapshot's image, required on node-b through the scheduler",
			pod.Annotations, pod.Spec.NodeName, checkpoint.RequiredNode(pod))
	}
	env.UpdatePodStatus(t, ns, "fork", func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		st.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "python", ImageID: "x",
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128,
				Message: `OCI runtime restore failed: "Mounts" does not match across checkpoint restore`}}}}
	})
	waitForConditions(t, ns, "fork", notReady(sandboxv1beta1.SandboxReasonRestoreFailed,
		`Pod fork could not start from SandboxSnapshot warm: container main: OCI runtime restore failed: "Mounts" does not match across `+
			`checkpoint restore. A Sandbox that starts from a snapshot needs the containers, volumes and mounts of the Sandbox it was `+
			`taken of: a fork copies them; for a template, snapshot a sandbox made from that template`))
	if still := framework.Read[corev1.Pod](t, env, ns, "fork"); still.UID != pod.UID || still.DeletionTimestamp != nil {
		t.Errorf("the Pod that could not restore was replaced or deleted (uid %s, was %s)", still.UID, pod.UID)
	}
}
