package sandboxwarmpool

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestBoundMemberLeavesThePool binds a member as the claim controller does and checks that the
// pool replaces it and never touches the bound sandbox again.
func TestBoundMemberLeavesThePool(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.StartKubelet(t, ns)
	pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(2))
	before := members(t, ns, pool)

	bound := bindFresh(t, before[0])
	pool = waitForRefill(t, ns, "pool", 2)
	after := members(t, ns, pool)
	if slices.Contains(uids(after), bound.UID) {
		t.Errorf("The bound sandbox %s is still a member", bound.Name)
	}
	if !slices.Contains(uids(after), before[1].UID) {
		t.Errorf("The unbound member %s was replaced", before[1].Name)
	}

	// The pool leaves the bound sandbox alone: its owner, labels and existence stay the claim's.
	framework.Consistently(t, quiet, func() (bool, string) {
		sb := &sandboxv1beta1.Sandbox{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(bound), sb); err != nil {
			return false, err.Error()
		}
		ref := metav1.GetControllerOf(sb)
		_, pooled := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]
		ok := sb.DeletionTimestamp == nil && ref != nil && ref.Kind == "SandboxClaim" && len(sb.OwnerReferences) == 1 && !pooled &&
			sb.Labels[sandboxv1beta1.ClaimUIDLabel] == bound.Labels[sandboxv1beta1.ClaimUIDLabel]
		return ok, fmt.Sprintf("bound sandbox %s: deletion %v, owners %v, labels %v", sb.Name, sb.DeletionTimestamp, sb.OwnerReferences, sb.Labels)
	})
}

// TestBurstOfBindingsDoesNotOverCreate binds most of a pool's members at once, again and again,
// with the controller's Sandbox informer lagging behind the API server as it does under load:
// each pass then runs on a cache that does not show the members earlier passes created. It
// checks from the API server's own sequence of changes that the pool never has more than
// spec.replicas members and creates exactly one replacement per bound member.
func TestBurstOfBindingsDoesNotOverCreate(t *testing.T) {
	t.Parallel()
	const replicas, bursts, perBurst = 10, 3, 8
	ns := startController(t, nil, slowSandboxWatches(300*time.Millisecond))
	env.StartKubelet(t, ns)
	pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(replicas))

	w := watchSandboxes(t, ns)
	poolUID := pool.UID
	w.setCheck(func(sbs []*sandboxv1beta1.Sandbox) string {
		if total, _ := memberCounts(sbs, poolUID); total > replicas {
			return fmt.Sprintf("the pool has %d members, more than its %d replicas,", total, replicas)
		}
		return ""
	})

	bound := 0
	for range bursts {
		ms := members(t, ns, pool)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range min(perBurst, len(ms)) {
			wg.Go(func() {
				if err := bind(t, &ms[i]); err != nil {
					// The Sandbox changed since it was listed (its status): it stays in the pool.
					if !apierrors.IsConflict(err) {
						t.Errorf("Binding %s: %v", ms[i].Name, err)
					}
					return
				}
				mu.Lock()
				bound++
				mu.Unlock()
			})
		}
		wg.Wait()
		waitForMembers(t, ns, pool, replicas)
	}
	waitForPool(t, ns, "pool", full(replicas))
	framework.Consistently(t, quiet, func() (bool, string) {
		created := w.addedCount()
		return created == bound, fmt.Sprintf("%d Sandboxes created for %d bound members", created, bound)
	})
	w.verify(t)
	if bound < bursts*perBurst/2 {
		t.Errorf("Only %d members were bound; the test did not make a burst", bound)
	}
}

// TestPoolDeletionLeavesBoundSandboxes deletes a pool and checks, where the garbage collector
// would act, that its unbound members go with it (they carry it as controller, blocking its
// deletion while they exist under foreground deletion) and its bound sandboxes do not (they no
// longer reference it). While the pool is being deleted it no longer replaces members.
func TestPoolDeletionLeavesBoundSandboxes(t *testing.T) {
	t.Parallel()
	ns := startController(t, nil)
	env.StartKubelet(t, ns)
	pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(3))
	bound := bindFresh(t, members(t, ns, pool)[0])
	pool = waitForRefill(t, ns, "pool", 3)
	unbound := members(t, ns, pool)

	// Foreground deletion: the API server keeps the pool, with a deletion timestamp, until the
	// garbage collector (absent here) has deleted its members.
	if err := env.Client.Delete(t.Context(), pool, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatalf("Deleting the pool: %v", err)
	}
	framework.Eventually(t, func() (bool, string) {
		p := framework.Read[extv1beta1.SandboxWarmPool](t, env, ns, "pool")
		return p.DeletionTimestamp != nil, "the pool is not being deleted yet"
	})
	for _, sb := range unbound {
		ref := metav1.GetControllerOf(&sb)
		if ref == nil || ref.UID != pool.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("Unbound member %s owner references %v; want the pool as controller, blocking its deletion", sb.Name, sb.OwnerReferences)
		}
	}
	sb := &sandboxv1beta1.Sandbox{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(bound), sb); err != nil {
		t.Fatalf("Reading the bound sandbox: %v", err)
	}
	for _, ref := range sb.OwnerReferences {
		if ref.UID == pool.UID {
			t.Errorf("The bound sandbox %s still references the pool: %v", sb.Name, sb.OwnerReferences)
		}
	}

	// A member bound while the pool is going is not replaced.
	bindFresh(t, unbound[0])
	framework.Consistently(t, quiet, func() (bool, string) {
		ms := members(t, ns, pool)
		return len(ms) == 2, fmt.Sprintf("%d members while the pool is being deleted; want the 2 left", len(ms))
	})
}
