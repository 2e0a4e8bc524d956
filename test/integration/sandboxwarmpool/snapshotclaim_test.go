package sandboxwarmpool

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// readySnapshot creates the SandboxSnapshot name and writes the status kubox-node and the
// SandboxSnapshot controller write once it is taken (there is no node here): Ready, on node-a,
// of a sandbox that held the settings of sourceClaim (status.sourceClaim, as TestSourceClaim
// shows the controller records it). One merge patch, so the controller's own writes of the
// status, from an older version, fail and see it.
func readySnapshot(t *testing.T, ns, name string, sourceClaim map[string]any) {
	t.Helper()
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "alice-gone"}}}
	env.Create(t, snap)
	status := map[string]any{
		"conditions": []map[string]any{{"type": extv1beta1.SnapshotConditionReady, "status": "True", "reason": extv1beta1.SnapshotReasonTaken,
			"message": "taken", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
		"snapshot": map[string]any{"snapshot": "snap-uid", "nodeName": "node-a", "image": "/snapshots/" + ns + "/snap-uid/image",
			"sizeBytes": 1 << 20, "duration": "1s"},
		"sourcePodUID": "alice-pod-uid",
		"sourceClaim":  sourceClaim,
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Patch(t.Context(), snap, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("Writing the status of SandboxSnapshot %s: %v", name, err)
	}
}

// TestSnapshotOfAClaimServesNoOtherClaim is the attack of issue #36 hole 9: a Full snapshot of the
// sandbox of claim alice, which set spec.env and spec.secretFiles, backs a warm pool (its
// template's snapshotRef) and is named by claim bob. Restored, every member would hold alice's
// environment in its processes' memory, her secret files on its disk and her sandbox's agent
// token in the agent's memory, and hand them to whichever claim takes it. No Pod restores from it
// for a pool member or for bob: both wait, Ready=False naming the snapshot, alice and the fix. A
// plain Sandbox (a fork, made by whoever may use the snapshot) still starts from it.
func TestSnapshotOfAClaimServesNoOtherClaim(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	readySnapshot(t, ns, "golden", map[string]any{"name": "alice", "uid": "alice-uid", "env": true, "secretFiles": true})
	tpl := testutil.MakeTemplate("restored", ns).Unmanaged().Obj()
	tpl.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "golden"}
	env.Create(t, tpl)
	pool := testutil.MakePool("restored", ns, "restored").Replicas(1).Obj()
	env.Create(t, pool)
	// bob's claim starts cold from the template, whose snapshotRef its sandbox gets.
	claim := testutil.MakeClaim("bob", ns).Obj()
	claim.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: "restored"}
	env.Create(t, claim)
	fork := testutil.MakeSandbox("fork", ns).Obj()
	fork.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "golden"}
	env.Create(t, fork)

	// The fork, a Sandbox of no claim, restores: the snapshot is not refused for everyone.
	if pod := framework.WaitForObject(t, env, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fork"}}, nil); pod.Annotations[contract.RestoreImageAnnotation] == "" {
		t.Errorf("the fork's Pod does not restore from the snapshot: %v", pod.Annotations)
	}
	// Once the pool's member and bob's sandbox have been reconciled (either way), neither restores.
	framework.Eventually(t, func() (bool, string) {
		ms := members(t, ns, pool)
		bobs := &sandboxv1beta1.Sandbox{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "bob"}, bobs); err != nil || len(ms) != 1 {
			return false, fmt.Sprintf("%d members, bob's sandbox: %v", len(ms), err)
		}
		for _, sb := range []sandboxv1beta1.Sandbox{ms[0], *bobs} {
			if meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) == nil {
				return false, "Sandbox " + sb.Name + " has no Ready condition yet"
			}
		}
		return true, ""
	})
	framework.Consistently(t, time.Second, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := env.Client.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Name != "fork" && p.Annotations[contract.RestoreImageAnnotation] != "" {
				return false, fmt.Sprintf("Pod %s restores alice's snapshot %s for another claim", p.Name, p.Annotations[contract.RestoreImageAnnotation])
			}
		}
		return true, ""
	})
	refusal := "SandboxSnapshot golden holds the spec.env and spec.secretFiles of SandboxClaim alice, which a restore would hand to whichever claim takes this warm pool member"
	framework.Eventually(t, func() (bool, string) {
		ms := members(t, ns, pool)
		if len(ms) != 1 {
			return false, fmt.Sprintf("%d members", len(ms))
		}
		c := meta.FindStatusCondition(ms[0].Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		return c != nil && c.Reason == sandboxv1beta1.SandboxReasonSnapshotNotReady && strings.HasPrefix(c.Message, refusal),
			fmt.Sprintf("member %s Ready %+v; want SnapshotNotReady: %s", ms[0].Name, c, refusal)
	})
	bobRefusal := "SandboxSnapshot golden holds the spec.env and spec.secretFiles of SandboxClaim alice, which a restore would hand to this Sandbox's claim"
	framework.Eventually(t, func() (bool, string) {
		got := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "bob")
		c := meta.FindStatusCondition(got.Status.Conditions, extv1beta1.ClaimConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && strings.HasPrefix(c.Message, bobRefusal),
			fmt.Sprintf("claim bob Ready %+v; want False: %s", c, bobRefusal)
	})
}
