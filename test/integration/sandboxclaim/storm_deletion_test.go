package sandboxclaim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// The deletion storms are issue #43's: agent-sandbox v1.0.13 hardened deletion and adoption races
// across Sandbox, Claim and WarmPool. Claims and pools are deleted while claims bind, members
// while claims adopt them, with kube-controller-manager's garbage collector running, and afterwards
// (deletionProblems): no Sandbox is owned by two claims or by a claim and a pool; none is left
// without a live owner, nor a Pod, Service or PVC; every live claim is Ready with the one Sandbox
// it controls, or says why not with a reason the storm allows; every status agrees with what it
// describes. The numbers are small: a storm costs seconds of CPU.
const deletionPool = 8

// startDeletionStorm starts a namespace with the kubelet stand-in, kubox and the garbage
// collector, a template and a full pool "pool" of deletionPool members, and returns the
// namespace and a random source whose seed is logged.
func startDeletionStorm(t *testing.T) (string, *rand.Rand) {
	t.Helper()
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	env.StartKubox(t, ns, nil)
	startGarbageCollector(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(deletionPool).Obj())
	waitForPoolReady(t, ns, "pool", deletionPool)
	seed := uint64(time.Now().UnixNano())
	t.Logf("Random seed %d (it draws the storm's delays; the interleaving depends on timing too)", seed)
	return ns, rand.New(rand.NewPCG(seed, seed>>1)) //nolint:gosec // test timing, not security
}

// TestStormClaimsDeletedWhileBinding deletes two claims in three at a random moment in the 150ms
// after their creation (before, during or after the bind), half of them with foreground
// propagation, while the others bind next to them; half the deleted claims are created again
// under the same name at once, and meet the sandbox of the claim before them while the garbage
// collector deletes it (a cold sandbox is named like its claim).
func TestStormClaimsDeletedWhileBinding(t *testing.T) {
	const claims = 30
	ns, rnd := startDeletionStorm(t)
	reasons := watchReasons(t, ns)
	delays := make([]time.Duration, claims)
	for i := range delays {
		delays[i] = time.Duration(rnd.IntN(150)) * time.Millisecond
	}
	var mu sync.Mutex
	var live []string
	err := stormOf(claims, 3, func(i int) error {
		c := testutil.MakeClaim(fmt.Sprintf("c-%d", i), ns).WarmPool("pool").Obj()
		if err := env.Client.Create(context.Background(), c); err != nil {
			return fmt.Errorf("creating SandboxClaim %s: %w", c.Name, err)
		}
		if i%3 != 0 {
			time.Sleep(delays[i])
			if err := deleteWith(c, i%2 == 0); err != nil || i%3 == 2 {
				return err
			}
			if err := recreate(c); err != nil {
				return err
			}
		}
		mu.Lock()
		live = append(live, c.Name)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, ns, live)
	waitForPoolReady(t, ns, "pool", deletionPool)
	settleDeletions(t, ns, live, nil)
	t.Logf("Reasons the claims were seen Ready=False with: %v", reasons.counts())
	// No Sandbox here is anyone's but the claims': a claim created again meets only its
	// predecessor's, which it waits for.
	if n := reasons.claimsWith(extv1beta1.ClaimReasonAdoptionConflict); n > 0 {
		t.Errorf("%d claims were seen Ready=False/AdoptionConflict; want none: every Sandbox here is a claim's or a pool's", n)
	}
}

// recreate creates claim again under its name once the API server has let its deletion through
// (a claim deleted in the foreground stays until the garbage collector deleted its sandbox).
func recreate(claim *extv1beta1.SandboxClaim) error {
	err := wait.PollUntilContextTimeout(context.Background(), framework.PollInterval, burstTimeout, true, func(ctx context.Context) (bool, error) {
		c := testutil.MakeClaim(claim.Name, claim.Namespace).WarmPool(claim.Spec.WarmPoolRef.Name).Obj()
		err := env.Client.Create(ctx, c)
		switch {
		case apierrors.IsAlreadyExists(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("creating SandboxClaim %s again: %w", claim.Name, err)
		}
		return true, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("creating SandboxClaim %s again: the deleted one is still there after %s (a foreground deletion waits for the garbage collector): %w",
			claim.Name, burstTimeout, err)
	}
	return err
}

// TestStormPoolDeletedMidBind deletes the pool while claims bind from it, with background,
// foreground and orphan propagation in turn, and recreates it each time once it is gone: the
// claims made in between wait for it (WarmPoolNotFound) or start cold, the members of the pool
// before are deleted by the garbage collector or, orphaned, adopted by the new pool (never one a
// claim took), and every claim ends Ready.
func TestStormPoolDeletedMidBind(t *testing.T) {
	const claims = 36
	ns, rnd := startDeletionStorm(t)
	seen := watchBindings(t, ns)
	reasons := watchReasons(t, ns)
	names, created := createClaims(context.Background(), ns, "pool", "c", claims, 3, 30*time.Millisecond)
	for round, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground,
		metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan} {
		waitBound(t, ns, (round+1)*claims/5)
		time.Sleep(time.Duration(rnd.IntN(50)) * time.Millisecond)
		pool := &extv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"}}
		if err := env.Client.Delete(context.Background(), pool, client.PropagationPolicy(policy)); err != nil {
			t.Fatalf("Deleting SandboxWarmPool pool (%s): %v", policy, err)
		}
		logProgress(t, ns, fmt.Sprintf("deleted the pool (%s propagation)", policy))
		env.WaitGone(t, pool)
		env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(deletionPool).Obj())
		logProgress(t, ns, "recreated the pool")
	}
	settleStormOfDeletions(t, ns, names, created, seen, reasons)
}

// TestStormTemplateDeletedMidBind deletes the template of the pool while claims bind, and creates
// it again (the same spec, a new object) once it is gone: the claims made in between wait
// (TemplateNotFound) and then bind, the pool keeps its members, which the new template's
// blueprint still describes, and every claim ends Ready.
func TestStormTemplateDeletedMidBind(t *testing.T) {
	const claims = 24
	ns, rnd := startDeletionStorm(t)
	seen := watchBindings(t, ns)
	reasons := watchReasons(t, ns)
	names, created := createClaims(context.Background(), ns, "pool", "c", claims, 3, 30*time.Millisecond)
	waitBound(t, ns, claims/4)
	time.Sleep(time.Duration(rnd.IntN(50)) * time.Millisecond)
	tpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "python"}}
	if err := env.Client.Delete(context.Background(), tpl); err != nil {
		t.Fatal(err)
	}
	logProgress(t, ns, "deleted the template")
	env.WaitGone(t, tpl)
	time.Sleep(time.Duration(rnd.IntN(300)) * time.Millisecond)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	logProgress(t, ns, "recreated the template")
	settleStormOfDeletions(t, ns, names, created, seen, reasons)
}

// TestStormMembersDeletedWhileAdopted deletes pool members at random, as a user or an eviction
// would, while claims adopt them, and deletes some claims together with the sandbox they were just
// bound, so that the claim's deletion and its sandbox's meet. A claim whose sandbox was deleted
// after the bind ends Ready=False/SandboxMissing; every other live claim ends Ready.
func TestStormMembersDeletedWhileAdopted(t *testing.T) {
	const claims = 30
	ns, rnd := startDeletionStorm(t)
	reasons := watchReasons(t, ns)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var deleted int
	wg.Go(func() { deleted = deleteMembersUntil(ctx, ns, rnd.Int64()) })
	var mu sync.Mutex
	var live []string
	err := stormOf(claims, 3, func(i int) error {
		c := testutil.MakeClaim(fmt.Sprintf("c-%d", i), ns).WarmPool("pool").Obj()
		if err := env.Client.Create(context.Background(), c); err != nil {
			return fmt.Errorf("creating SandboxClaim %s: %w", c.Name, err)
		}
		if i%3 != 0 {
			mu.Lock()
			live = append(live, c.Name)
			mu.Unlock()
			return nil
		}
		return deleteWithSandbox(c, i%2 == 0)
	})
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Deleted %d pool members during the storm", deleted)
	waitForPoolReady(t, ns, "pool", deletionPool)
	settleDeletions(t, ns, live, map[string]bool{extv1beta1.ClaimReasonSandboxMissing: true})
	t.Logf("Reasons the claims were seen Ready=False with: %v", reasons.counts())
}

// claimReasons counts, from a watch, the claims seen Ready=False with each reason: what the storm
// made the controller meet, for the log.
type claimReasons struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
	// message is the last message seen with each reason.
	message map[string]string
}

// watchReasons follows the claims of ns until the test ends.
func watchReasons(t *testing.T, ns string) *claimReasons {
	t.Helper()
	r := &claimReasons{seen: map[string]map[string]bool{}, message: map[string]string{}}
	watchClaims(t, ns, func(claim *extv1beta1.SandboxClaim) {
		cond := readyCondition(claim)
		if cond == nil || cond.Status != metav1.ConditionFalse {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.seen[cond.Reason] == nil {
			r.seen[cond.Reason] = map[string]bool{}
		}
		r.seen[cond.Reason][string(claim.UID)] = true
		r.message[cond.Reason] = cond.Message
	})
	return r
}

// claimsWith returns how many claims were seen Ready=False with reason.
func (r *claimReasons) claimsWith(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen[reason])
}

// counts returns how many claims were seen with each reason, and a message of each.
func (r *claimReasons) counts() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for reason, claims := range r.seen {
		fmt.Fprintf(&b, "\n  %s: %d claims, e.g. %q", reason, len(claims), r.message[reason])
	}
	return b.String()
}

// stormOf runs do(0) .. do(n-1) from workers goroutines and returns the errors met.
func stormOf(n, workers int, do func(i int) error) error {
	work := make(chan int, n)
	for i := range n {
		work <- i
	}
	close(work)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range workers {
		wg.Go(func() {
			for i := range work {
				if err := do(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteWith deletes obj with foreground or background propagation; gone already is no error.
func deleteWith(obj client.Object, foreground bool) error {
	policy := metav1.DeletePropagationBackground
	if foreground {
		policy = metav1.DeletePropagationForeground
	}
	if err := env.Client.Delete(context.Background(), obj, client.PropagationPolicy(policy)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// deleteWithSandbox waits until claim controls a Sandbox, then deletes both at once. A claim
// whose sandbox went before (deleteMembersUntil deleted it as it was bound) is deleted alone.
func deleteWithSandbox(claim *extv1beta1.SandboxClaim, foreground bool) error {
	var sb *sandboxv1beta1.Sandbox
	latest := claim.DeepCopy()
	err := wait.PollUntilContextTimeout(context.Background(), framework.PollInterval, burstTimeout, true, func(ctx context.Context) (bool, error) {
		list := &sandboxv1beta1.SandboxList{}
		if err := env.Client.List(ctx, list, client.InNamespace(claim.Namespace),
			client.MatchingLabels{sandboxv1beta1.ClaimUIDLabel: string(claim.UID)}); err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			sb = &list.Items[0]
			return true, nil
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), latest); err != nil {
			return false, err
		}
		ready := readyCondition(latest)
		return ready != nil && ready.Reason == extv1beta1.ClaimReasonSandboxMissing, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for SandboxClaim %s to be bound (%s): %w", claim.Name, describeClaim(latest), err)
	}
	if sb == nil {
		return deleteWith(claim, foreground)
	}
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs <- deleteWith(claim, foreground) })
	wg.Go(func() { errs <- deleteWith(sb, false) })
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// deleteMembersUntil deletes a random member of the pool every 10ms until ctx ends, with no
// precondition, as kubectl delete does, and returns how many it deleted.
func deleteMembersUntil(ctx context.Context, ns string, seed int64) int {
	rnd := rand.New(rand.NewPCG(uint64(seed), 7)) //nolint:gosec // test timing, not security
	deleted := 0
	for ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		list := &sandboxv1beta1.SandboxList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns), client.HasLabels{sandboxv1beta1.WarmPoolSandboxLabel}); err != nil || len(list.Items) == 0 {
			continue
		}
		sb := &list.Items[rnd.IntN(len(list.Items))]
		if err := env.Client.Delete(ctx, sb); err == nil {
			deleted++
		}
	}
	return deleted
}

// settleDeletions waits until deletionProblems finds nothing in ns, and fails the test with what
// it finds if that does not come: live are the claims the storm did not delete; a live claim may
// end Ready=False only with a reason in notReady.
func settleDeletions(t *testing.T, ns string, live []string, notReady map[string]bool) {
	t.Helper()
	var summary string
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		problems, s := deletionProblems(t, ns, live, notReady)
		summary = s
		return len(problems) == 0, strings.Join(problems, "\n")
	})
	t.Log(summary)
}

// stormObjects is what a namespace holds after a storm.
type stormObjects struct {
	claims    []extv1beta1.SandboxClaim
	pools     []extv1beta1.SandboxWarmPool
	sandboxes []sandboxv1beta1.Sandbox
	// dependents are the Pods, Services and PVCs, each with its kind.
	dependents []dependent
}

type dependent struct {
	kind string
	obj  metav1.Object
}

func listStorm(ctx context.Context, ns string) (*stormObjects, error) {
	o := &stormObjects{}
	claims, pools, sbs := &extv1beta1.SandboxClaimList{}, &extv1beta1.SandboxWarmPoolList{}, &sandboxv1beta1.SandboxList{}
	pods, svcs, pvcs := &corev1.PodList{}, &corev1.ServiceList{}, &corev1.PersistentVolumeClaimList{}
	for _, l := range []client.ObjectList{claims, pools, sbs, pods, svcs, pvcs} {
		if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
	}
	o.claims, o.pools, o.sandboxes = claims.Items, pools.Items, sbs.Items
	for i := range pods.Items {
		o.dependents = append(o.dependents, dependent{"Pod", &pods.Items[i]})
	}
	for i := range svcs.Items {
		o.dependents = append(o.dependents, dependent{"Service", &svcs.Items[i]})
	}
	for i := range pvcs.Items {
		o.dependents = append(o.dependents, dependent{"PersistentVolumeClaim", &pvcs.Items[i]})
	}
	return o, nil
}

// deletionProblems returns what breaks the deletion storms' invariants in ns now, and a summary.
func deletionProblems(t *testing.T, ns string, live []string, notReady map[string]bool) ([]string, string) {
	t.Helper()
	o, err := listStorm(t.Context(), ns)
	if err != nil {
		return []string{err.Error()}, ""
	}
	var problems []string
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	claimByUID, poolByUID := map[types.UID]*extv1beta1.SandboxClaim{}, map[types.UID]*extv1beta1.SandboxWarmPool{}
	for i := range o.claims {
		claimByUID[o.claims[i].UID] = &o.claims[i]
	}
	for i := range o.pools {
		poolByUID[o.pools[i].UID] = &o.pools[i]
	}
	owned := map[types.UID][]*sandboxv1beta1.Sandbox{}
	members := map[types.UID][]*sandboxv1beta1.Sandbox{}
	for i := range o.sandboxes {
		sb := &o.sandboxes[i]
		claimRefs, poolRefs := 0, 0
		for _, ref := range sb.OwnerReferences {
			switch ref.Kind {
			case "SandboxClaim":
				claimRefs++
			case "SandboxWarmPool":
				poolRefs++
			}
		}
		ref := metav1.GetControllerOf(sb)
		switch {
		case claimRefs+poolRefs > 1:
			errorf("Sandbox %s is owned by %d claims and %d pools: %v", sb.Name, claimRefs, poolRefs, sb.OwnerReferences)
		case ref == nil:
			errorf("Sandbox %s has no controller: leaked (owner references %v)", sb.Name, sb.OwnerReferences)
		case sb.DeletionTimestamp != nil:
			errorf("Sandbox %s is still being deleted (finalizers %v)", sb.Name, sb.Finalizers)
		case ref.Kind == "SandboxClaim" && claimByUID[ref.UID] == nil, ref.Kind == "SandboxWarmPool" && poolByUID[ref.UID] == nil:
			errorf("Sandbox %s is controlled by %s %s (uid %s), which is gone: not garbage-collected yet", sb.Name, ref.Kind, ref.Name, ref.UID)
		case ref.Kind == "SandboxClaim":
			if sb.Labels[sandboxv1beta1.ClaimUIDLabel] != string(ref.UID) {
				errorf("Sandbox %s is bound to claim %s but labelled claim-uid %q", sb.Name, ref.Name, sb.Labels[sandboxv1beta1.ClaimUIDLabel])
			}
			owned[ref.UID] = append(owned[ref.UID], sb)
		case ref.Kind == "SandboxWarmPool":
			if _, bound := sb.Labels[sandboxv1beta1.ClaimUIDLabel]; bound {
				errorf("Pool member %s carries a claim-uid label %q", sb.Name, sb.Labels[sandboxv1beta1.ClaimUIDLabel])
			}
			members[ref.UID] = append(members[ref.UID], sb)
		default:
			errorf("Sandbox %s is controlled by %s %s", sb.Name, ref.Kind, ref.Name)
		}
	}
	problems = append(problems, dependentProblems(o)...)
	problems = append(problems, claimProblems(o, owned, live, notReady)...)
	problems = append(problems, poolProblems(o, members)...)
	return problems, fmt.Sprintf("%d claims, %d pools, %d Sandboxes, %d Pods, Services and PVCs",
		len(o.claims), len(o.pools), len(o.sandboxes), len(o.dependents))
}

// dependentProblems: every Pod, Service and PVC is controlled by a Sandbox that exists, and every
// Sandbox has one Pod.
func dependentProblems(o *stormObjects) []string {
	var problems []string
	sbByUID := map[types.UID]bool{}
	for i := range o.sandboxes {
		sbByUID[o.sandboxes[i].UID] = true
	}
	pods := map[types.UID]int{}
	for _, d := range o.dependents {
		ref := metav1.GetControllerOf(d.obj)
		switch {
		case ref == nil || ref.Kind != "Sandbox":
			problems = append(problems, fmt.Sprintf("%s %s is not controlled by a Sandbox: leaked (owner references %v)", d.kind, d.obj.GetName(), d.obj.GetOwnerReferences()))
		case !sbByUID[ref.UID]:
			problems = append(problems, fmt.Sprintf("%s %s belongs to Sandbox %s (uid %s), which is gone: not garbage-collected yet", d.kind, d.obj.GetName(), ref.Name, ref.UID))
		case d.kind == "Pod":
			pods[ref.UID]++
		}
	}
	for i := range o.sandboxes {
		if n := pods[o.sandboxes[i].UID]; n != 1 {
			problems = append(problems, fmt.Sprintf("Sandbox %s has %d Pods; want 1", o.sandboxes[i].Name, n))
		}
	}
	return problems
}

// claimProblems: no claim is being deleted still (deleted claims are gone, their sandboxes with
// them); a live claim controls at most one Sandbox; it is Ready with it, named in its status, or
// Ready=False with a reason in notReady and no Sandbox; every status is of the claim's generation.
func claimProblems(o *stormObjects, owned map[types.UID][]*sandboxv1beta1.Sandbox, live []string, notReady map[string]bool) []string {
	var problems []string
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	isLive := map[string]bool{}
	for _, n := range live {
		isLive[n] = true
	}
	found := map[string]bool{}
	for i := range o.claims {
		c := &o.claims[i]
		found[c.Name] = true
		sbs := owned[c.UID]
		ready := meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionReady)
		switch {
		case c.DeletionTimestamp != nil:
			errorf("SandboxClaim %s is still being deleted (finalizers %v, %d Sandboxes)", c.Name, c.Finalizers, len(sbs))
		case !isLive[c.Name]:
			errorf("SandboxClaim %s was deleted but exists (uid %s)", c.Name, c.UID)
		case len(sbs) > 1:
			errorf("SandboxClaim %s controls %d Sandboxes", c.Name, len(sbs))
		case ready == nil || c.Status.ObservedGeneration != c.Generation || ready.ObservedGeneration != c.Generation:
			errorf("%s; want a status of generation %d", describeClaim(c), c.Generation)
		case ready.Status == metav1.ConditionTrue && (len(sbs) != 1 || c.Status.Sandbox.Name != sbs[0].Name):
			errorf("%s; Ready, but it controls %d Sandboxes", describeClaim(c), len(sbs))
		case ready.Status != metav1.ConditionTrue && (!notReady[ready.Reason] || len(sbs) != 0):
			errorf("%s; want Ready, or a terminal reason of %v and no Sandbox (it controls %d)", describeClaim(c), notReady, len(sbs))
		}
	}
	for _, n := range live {
		if !found[n] {
			errorf("SandboxClaim %s, never deleted, does not exist", n)
		}
	}
	return problems
}

// poolProblems: a pool's status counts the members it controls, of its generation.
func poolProblems(o *stormObjects, members map[types.UID][]*sandboxv1beta1.Sandbox) []string {
	var problems []string
	for i := range o.pools {
		p := &o.pools[i]
		ready := int32(0)
		for _, sb := range members[p.UID] {
			if isReadySandbox(sb) {
				ready++
			}
		}
		n := int32(len(members[p.UID]))
		if p.Status.Replicas != n || p.Status.ReadyReplicas != ready || p.Status.ObservedGeneration != p.Generation {
			problems = append(problems, fmt.Sprintf("SandboxWarmPool %s status {replicas %d, readyReplicas %d, observedGeneration %d}; it controls %d members, %d ready, generation %d",
				p.Name, p.Status.Replicas, p.Status.ReadyReplicas, p.Status.ObservedGeneration, n, ready, p.Generation))
		}
	}
	return problems
}

func isReadySandbox(sb *sandboxv1beta1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
}

// settleStormOfDeletions waits for the storm's claims to be created and Ready and the pool full
// again, then checks what a deletion storm must leave: every invariant of settleDeletions, and no
// claim seen Ready with two sandboxes or losing Ready.
func settleStormOfDeletions(t *testing.T, ns string, names []string, created func() error, seen *readyBindings, reasons *claimReasons) {
	t.Helper()
	if err := created(); err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, ns, names)
	waitForPoolReady(t, ns, "pool", deletionPool)
	settleDeletions(t, ns, names, nil)
	for _, p := range seen.problems() {
		t.Error(p)
	}
	t.Logf("Reasons the claims were seen Ready=False with: %v", reasons.counts())
}
