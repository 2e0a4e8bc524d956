package sdk

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestSnapshotWithoutANodeSaysSo: Snapshot and Fork against a controller that cannot reach
// kubox-node (none is configured here) fail with ErrSnapshotFailed and the controller's reason,
// leave a SandboxSnapshot that says CheckpointFailed, and create no fork.
func TestSnapshotWithoutANodeSaysSo(t *testing.T) {
	f := setup(t)
	sb := claimWithAgent(t, f)
	_, err := sb.Snapshot(t.Context())
	if !errors.Is(err, kubox.ErrSnapshotFailed) || !strings.Contains(err.Error(), "controllers.sandbox.memory.tokenFile") {
		t.Fatalf("Snapshot() = %v; want ErrSnapshotFailed naming the missing configuration", err)
	}
	snaps := &extv1beta1.SandboxSnapshotList{}
	if err := env.Client.List(t.Context(), snaps, client.InNamespace(f.ns)); err != nil || len(snaps.Items) != 1 {
		t.Fatalf("SandboxSnapshots: %d, %v; want the one Snapshot created", len(snaps.Items), err)
	}
	s := snaps.Items[0]
	c := meta.FindStatusCondition(s.Status.Conditions, extv1beta1.SnapshotConditionReady)
	if s.Spec.SandboxRef.Name != sb.Name() || !strings.HasPrefix(s.Name, sb.Name()+"-snap-") || c == nil ||
		c.Reason != extv1beta1.SnapshotReasonCheckpointFailed || s.Status.Snapshot != nil {
		t.Errorf("SandboxSnapshot %s of %s: Ready %+v, snapshot %+v; want CheckpointFailed and none", s.Name, s.Spec.SandboxRef.Name, c, s.Status.Snapshot)
	}
	if _, err := sb.Fork(t.Context(), 2); !errors.Is(err, kubox.ErrSnapshotFailed) {
		t.Errorf("Fork(2) = %v; want ErrSnapshotFailed", err)
	}
	sbs := &sandboxv1beta1.SandboxList{}
	if err := env.Client.List(t.Context(), sbs, client.InNamespace(f.ns), client.HasLabels{sandboxv1beta1.ForkOfLabel}); err != nil || len(sbs.Items) != 0 {
		t.Errorf("forks after a failed snapshot: %d, %v; want none", len(sbs.Items), err)
	}
	t.Logf("Snapshot: %v", err)
}

// TestSandboxWaitsForItsSnapshot: a Sandbox whose spec.snapshotRef names a SandboxSnapshot that
// does not exist gets no Pod and says why (Ready=False/SnapshotNotReady); the SandboxSnapshot's
// spec cannot change once created.
func TestSandboxWaitsForItsSnapshot(t *testing.T) {
	f := setup(t)
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "from-snapshot"},
		Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: sandboxv1beta1.SandboxBlueprint{
			PodTemplate: sandboxv1beta1.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "python"}}}},
			SnapshotRef: &sandboxv1beta1.SnapshotReference{Name: "later"}}}}
	env.Create(t, sb)
	framework.Eventually(t, func() (bool, string) {
		got := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, sb.Name)
		c := meta.FindStatusCondition(got.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		return c != nil && c.Reason == sandboxv1beta1.SandboxReasonSnapshotNotReady &&
			c.Message == "SandboxSnapshot later, which spec.snapshotRef names, does not exist", fmt.Sprintf("Ready = %+v", c)
	})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: sb.Name}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("Pod of a Sandbox whose snapshot does not exist: %v; want none", err)
	}

	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "later"},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "nowhere"}}}
	env.Create(t, snap)
	framework.Eventually(t, func() (bool, string) {
		got := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, sb.Name)
		c := meta.FindStatusCondition(got.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		return c != nil && strings.Contains(c.Message, "is not Ready: Sandbox nowhere does not exist"), fmt.Sprintf("Ready = %+v", c)
	})
	err := env.Client.Patch(t.Context(), snap, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"sandboxRef":{"name":"elsewhere"}}}`)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("changing a SandboxSnapshot's spec: %v; want Invalid, spec is immutable", err)
	}
	if got := framework.Read[extv1beta1.SandboxSnapshot](t, env, f.ns, snap.Name); got.Spec.Type != extv1beta1.SnapshotTypeFull {
		t.Errorf("spec.type of a SandboxSnapshot created without one = %q; want Full", got.Spec.Type)
	}
	err = env.Client.Patch(t.Context(), snap, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"type":"Filesystem"}}`)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("changing a SandboxSnapshot's type: %v; want Invalid, spec is immutable", err)
	}
	memory := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "memory-only"},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "nowhere"}, Type: "Memory"}}
	if err := env.Client.Create(t.Context(), memory); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `supported values: "Full", "Filesystem"`) {
		t.Errorf("creating a SandboxSnapshot of type Memory: %v; want Invalid, naming Full and Filesystem", err)
	}
}
