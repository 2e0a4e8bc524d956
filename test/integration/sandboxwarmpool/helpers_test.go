package sandboxwarmpool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// quiet is how long a test watches for something that must not happen. A short window makes such
// a check weaker, never flaky.
const quiet = 2 * time.Second

// startController creates a namespace for t and starts every kubox reconciler watching it, set up
// as kubox-controller sets them up: the field indexes, the production caches and the default
// configuration, changed by configure when it is not nil.
func startController(t *testing.T, configure func(*configv1alpha1.ControllerConfiguration), opts ...framework.ManagerOption) string {
	t.Helper()
	ns := env.NewNamespace(t)
	env.StartKubox(t, ns, configure, opts...)
	return ns
}

// gracePeriod sets the readiness grace period and the unschedulable recheck interval.
func gracePeriod(grace, recheck time.Duration) func(*configv1alpha1.ControllerConfiguration) {
	return func(cfg *configv1alpha1.ControllerConfiguration) {
		cfg.Controllers.SandboxWarmPool.ReadinessGracePeriod = &metav1.Duration{Duration: grace}
		cfg.Controllers.SandboxWarmPool.UnschedulableRecheckInterval = &metav1.Duration{Duration: recheck}
	}
}

// createFullPool creates pool and, with its NetworkPolicy left unmanaged, the template it names,
// and waits until the pool is full: its replicas members Ready and built from the template.
func createFullPool(t *testing.T, ns string, pool *testutil.PoolWrapper) *extv1beta1.SandboxWarmPool {
	t.Helper()
	env.Create(t, testutil.MakeTemplate(pool.Spec.SandboxTemplateRef.Name, ns).Unmanaged().Obj())
	env.Create(t, pool.Obj())
	return waitForPool(t, ns, pool.Name, full(*pool.Spec.Replicas))
}

// members lists the Sandboxes pool controls that are not being deleted, oldest first.
func members(t *testing.T, ns string, pool *extv1beta1.SandboxWarmPool) []sandboxv1beta1.Sandbox {
	t.Helper()
	list := &sandboxv1beta1.SandboxList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("Listing Sandboxes: %v", err)
	}
	var out []sandboxv1beta1.Sandbox
	for _, sb := range list.Items {
		if controlledBy(&sb, pool.UID) && sb.DeletionTimestamp == nil {
			out = append(out, sb)
		}
	}
	slices.SortFunc(out, func(a, b sandboxv1beta1.Sandbox) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

func isReady(sb *sandboxv1beta1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
}

func uids(sbs []sandboxv1beta1.Sandbox) []types.UID {
	out := make([]types.UID, 0, len(sbs))
	for _, sb := range sbs {
		out = append(out, sb.UID)
	}
	slices.Sort(out)
	return out
}

// poolState is what a test waits for on a pool: its status counts and the reasons of its
// conditions, with every condition of the pool's current generation.
type poolState struct {
	Replicas, Ready, Updated    int32
	ReadyReason, ProgressReason string
}

func (s poolState) String() string {
	return fmt.Sprintf("replicas %d, ready %d, updated %d, Ready reason %s, Progressing reason %s",
		s.Replicas, s.Ready, s.Updated, s.ReadyReason, s.ProgressReason)
}

func stateOf(pool *extv1beta1.SandboxWarmPool) poolState {
	s := poolState{Replicas: pool.Status.Replicas, Ready: pool.Status.ReadyReplicas, Updated: pool.Status.UpdatedReplicas}
	if c := meta.FindStatusCondition(pool.Status.Conditions, extv1beta1.WarmPoolConditionReady); c != nil && c.ObservedGeneration == pool.Generation {
		s.ReadyReason = c.Reason
	}
	if c := meta.FindStatusCondition(pool.Status.Conditions, extv1beta1.WarmPoolConditionProgressing); c != nil && c.ObservedGeneration == pool.Generation {
		s.ProgressReason = c.Reason
	}
	return s
}

// full is the state of a pool with n ready members built from its current template.
func full(n int32) poolState {
	return poolState{Replicas: n, Ready: n, Updated: n, ReadyReason: extv1beta1.WarmPoolReasonReplicasReady,
		ProgressReason: extv1beta1.WarmPoolReasonReplicasUpToDate}
}

// waitForRefill waits until the pool, which a claim just took a member of, is full with n members
// again: its status says so and the replacement exists. The status alone may still be the one
// from before the take while the refill is held (replenishDelay).
func waitForRefill(t *testing.T, ns, name string, n int32) *extv1beta1.SandboxWarmPool {
	t.Helper()
	pool := waitForPool(t, ns, name, full(n))
	framework.Eventually(t, func() (bool, string) {
		ms := members(t, ns, pool)
		return len(ms) == int(n), fmt.Sprintf("SandboxWarmPool %s has %d members; want %d once it has replaced the one taken", name, len(ms), n)
	})
	return waitForPool(t, ns, name, full(n))
}

// waitForPool waits until the pool's status is of its current generation and in state want, and
// returns the pool.
func waitForPool(t *testing.T, ns, name string, want poolState) *extv1beta1.SandboxWarmPool {
	t.Helper()
	var pool *extv1beta1.SandboxWarmPool
	framework.Eventually(t, func() (bool, string) {
		pool = &extv1beta1.SandboxWarmPool{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pool); err != nil {
			return false, err.Error()
		}
		got := stateOf(pool)
		return got == want && pool.Status.ObservedGeneration == pool.Generation,
			fmt.Sprintf("pool %s: %v (observedGeneration %d of %d); want %v", name, got, pool.Status.ObservedGeneration, pool.Generation, want)
	})
	return pool
}

// waitForMembers waits until the API server, rather than the pool's status, shows n Ready
// members of pool.
func waitForMembers(t *testing.T, ns string, pool *extv1beta1.SandboxWarmPool, n int) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		ms := members(t, ns, pool)
		ready := 0
		for i := range ms {
			if isReady(&ms[i]) {
				ready++
			}
		}
		return len(ms) == n && ready == n, fmt.Sprintf("pool %s has %d members, %d ready; want %d ready", pool.Name, len(ms), ready, n)
	})
}

// condition returns the pool's condition of type typ, failing the test without one.
func condition(t *testing.T, pool *extv1beta1.SandboxWarmPool, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(pool.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("Pool %s has no %s condition: %+v", pool.Name, typ, pool.Status.Conditions)
	}
	return *c
}

// bind plays the claim controller's warm path: one merge patch, with optimistic concurrency, that
// makes a claim the Sandbox's controller and takes it out of its pool, as the contract says.
func bind(t *testing.T, sb *sandboxv1beta1.Sandbox) error {
	t.Helper()
	base := sb.DeepCopy()
	claimUID := types.UID("claim-" + string(sb.UID))
	sb.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim", Name: "claim-" + sb.Name, UID: claimUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	delete(sb.Labels, sandboxv1beta1.WarmPoolSandboxLabel)
	sb.Labels[sandboxv1beta1.ClaimUIDLabel] = string(claimUID)
	sb.Labels[sandboxv1beta1.LaunchTypeLabel] = extv1beta1.LaunchTypeWarm
	return env.Client.Patch(t.Context(), sb, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// bindFresh binds sb, reading it again on conflicts (its status changes under the test).
func bindFresh(t *testing.T, sb sandboxv1beta1.Sandbox) *sandboxv1beta1.Sandbox {
	t.Helper()
	cur := sb.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cur), cur); err != nil {
			return err
		}
		return bind(t, cur)
	})
	if err != nil {
		t.Fatalf("Binding Sandbox %s: %v", sb.Name, err)
	}
	return cur
}

// sandboxWatch follows every change to the Sandboxes of a namespace, in the API server's order,
// and checks an invariant after each one: unlike polling, it cannot miss a state that lasted a
// moment.
type sandboxWatch struct {
	mu        sync.Mutex
	sandboxes map[types.UID]*sandboxv1beta1.Sandbox
	added     int
	check     func([]*sandboxv1beta1.Sandbox) string
	violation string
}

// watchSandboxes starts a sandboxWatch on ns until the test ends, from the Sandboxes that exist
// now: those count as neither added nor changed. Set the invariant with setCheck.
func watchSandboxes(t *testing.T, ns string) *sandboxWatch {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("Creating a watching client: %v", err)
	}
	list := &sandboxv1beta1.SandboxList{}
	if err := wc.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("Listing Sandboxes: %v", err)
	}
	sw := &sandboxWatch{sandboxes: map[types.UID]*sandboxv1beta1.Sandbox{}}
	for i := range list.Items {
		sw.sandboxes[list.Items[i].UID] = &list.Items[i]
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &sandboxv1beta1.SandboxList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		cancel()
		t.Fatalf("Watching Sandboxes: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range w.ResultChan() {
			sb, ok := ev.Object.(*sandboxv1beta1.Sandbox)
			if !ok {
				if ctx.Err() == nil {
					sw.fail(fmt.Sprintf("the watch failed: %s %+v", ev.Type, ev.Object))
				}
				continue
			}
			sw.apply(ev.Type, sb)
		}
	})
	t.Cleanup(func() {
		cancel()
		w.Stop()
		wg.Wait()
	})
	return sw
}

func (sw *sandboxWatch) fail(msg string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.violation == "" {
		sw.violation = msg
	}
}

func (sw *sandboxWatch) apply(typ watch.EventType, sb *sandboxv1beta1.Sandbox) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	switch typ {
	case watch.Added:
		sw.added++
		sw.sandboxes[sb.UID] = sb
	case watch.Modified:
		sw.sandboxes[sb.UID] = sb
	case watch.Deleted:
		delete(sw.sandboxes, sb.UID)
	}
	sw.runCheck(fmt.Sprintf("after %s %s", typ, sb.Name))
}

func (sw *sandboxWatch) runCheck(when string) {
	if sw.check == nil || sw.violation != "" {
		return
	}
	all := make([]*sandboxv1beta1.Sandbox, 0, len(sw.sandboxes))
	for _, sb := range sw.sandboxes {
		all = append(all, sb)
	}
	if v := sw.check(all); v != "" {
		sw.violation = v + " " + when
	}
}

// setCheck installs the invariant, checked at once and after every later change.
func (sw *sandboxWatch) setCheck(check func([]*sandboxv1beta1.Sandbox) string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.check = check
	sw.runCheck("when the check was installed")
}

// verify fails the test if the invariant was ever broken.
func (sw *sandboxWatch) verify(t *testing.T) {
	t.Helper()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.violation != "" {
		t.Errorf("Invariant broken: %s", sw.violation)
	}
}

// addedCount is how many Sandboxes were created since the watch started.
func (sw *sandboxWatch) addedCount() int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.added
}

// memberCounts counts, among sbs, the members of the pool with uid that are not being deleted,
// and the Ready ones among them.
func memberCounts(sbs []*sandboxv1beta1.Sandbox, uid types.UID) (total, ready int) {
	for _, sb := range sbs {
		if controlledBy(sb, uid) && sb.DeletionTimestamp == nil {
			total++
			if isReady(sb) {
				ready++
			}
		}
	}
	return total, ready
}
