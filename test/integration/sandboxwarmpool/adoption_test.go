package sandboxwarmpool

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestOrphansAreAdopted checks that unowned Sandboxes labelled as the pool's members (as a pool
// deleted with orphan propagation leaves them) are adopted and count towards replicas, while a
// labelled Sandbox that another controller owns, or that a claim once took, is left alone.
func TestOrphansAreAdopted(t *testing.T) {
	t.Parallel()
	// The orphans exist before the controllers start, so the pool's first pass sees them (a
	// pool created while its informer has not yet delivered an orphan fills itself with new
	// members instead, and later replaces the stale orphan).
	ns := env.NewNamespace(t)
	env.Create(t, testutil.MakeTemplate("tpl", ns).Unmanaged().Obj())
	poolLabel := sandboxv1beta1.NameHash("pool")
	orphan := testutil.MakeSandbox("orphan", ns).Label(sandboxv1beta1.WarmPoolSandboxLabel, poolLabel).Obj()
	foreign := testutil.MakeSandbox("foreign", ns).Label(sandboxv1beta1.WarmPoolSandboxLabel, poolLabel).Obj()
	foreign.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid", Controller: ptr.To(true)}}
	claimed := testutil.MakeSandbox("claimed", ns).Label(sandboxv1beta1.WarmPoolSandboxLabel, poolLabel).
		Label(sandboxv1beta1.ClaimUIDLabel, "claim-uid").Obj()
	for _, sb := range []*sandboxv1beta1.Sandbox{orphan, foreign, claimed} {
		env.Create(t, sb)
	}
	env.StartKubox(t, ns, nil)
	env.StartKubelet(t, ns)

	env.Create(t, testutil.MakePool("pool", ns, "tpl").Replicas(2).Obj())
	pool := waitForPool(t, ns, "pool", poolState{Replicas: 2, Ready: 2, Updated: 1,
		ReadyReason: "ReplicasReady", ProgressReason: "ReplicasUpToDate"})
	// The orphan has no template hash label: it is stale, but OnReplenish keeps it.
	ms := members(t, ns, pool)
	if len(ms) != 2 || (ms[0].Name != "orphan" && ms[1].Name != "orphan") {
		t.Errorf("Members %v; want the orphan and one new member", []string{ms[0].Name, ms[1].Name})
	}
	sb := &sandboxv1beta1.Sandbox{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "orphan"}, sb); err != nil {
		t.Fatalf("Reading the orphan: %v", err)
	}
	if ref := metav1.GetControllerOf(sb); ref == nil || ref.UID != pool.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("Orphan owner references %v; want the pool as controller", sb.OwnerReferences)
	}
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", "Normal", "Adopted", "orphan")

	framework.Consistently(t, quiet, func() (bool, string) {
		for _, want := range []*sandboxv1beta1.Sandbox{foreign, claimed} {
			got := &sandboxv1beta1.Sandbox{}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(want), got); err != nil {
				return false, err.Error()
			}
			if controlledBy(got, pool.UID) || len(got.OwnerReferences) != len(want.OwnerReferences) || got.DeletionTimestamp != nil {
				return false, fmt.Sprintf("Sandbox %s owner references %v, deletion %v; want it left alone", got.Name, got.OwnerReferences, got.DeletionTimestamp)
			}
		}
		return true, ""
	})
}
