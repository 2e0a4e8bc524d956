package sandboxclaim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandboxclaim"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// createClaims creates claims prefix-0 .. prefix-(n-1) of pool from workers goroutines, each
// waiting pace between creates, and returns their names and a wait function that returns the
// errors met.
func createClaims(ctx context.Context, ns, pool, prefix string, n, workers int, pace time.Duration) ([]string, func() error) {
	names := make([]string, n)
	work := make(chan string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		work <- names[i]
	}
	close(work)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range workers {
		wg.Go(func() {
			for name := range work {
				if err := env.Client.Create(ctx, testutil.MakeClaim(name, ns).WarmPool(pool).Obj()); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("creating SandboxClaim %s: %w", name, err))
					mu.Unlock()
				}
				time.Sleep(pace)
			}
		})
	}
	return names, func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}

// waitAllReady waits until every claim in names is Ready.
func waitAllReady(t *testing.T, ns string, names []string) {
	t.Helper()
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		list := &extv1beta1.SandboxClaimList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		ready := map[string]bool{}
		for i := range list.Items {
			ready[list.Items[i].Name] = hasReady(metav1.ConditionTrue, "")(&list.Items[i])
		}
		var waiting []string
		for _, n := range names {
			if !ready[n] {
				waiting = append(waiting, n)
			}
		}
		return len(waiting) == 0, fmt.Sprintf("%d of %d claims not Ready yet, e.g. %v", len(waiting), len(names), first(waiting, 5))
	})
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// bindings is what checkBindings found.
type bindings struct {
	warm, cold int
	// orphans are Sandboxes controlled by a claim that no longer exists: a garbage collector
	// deletes them.
	orphans int
}

// checkBindings waits until the exclusivity invariants hold in ns, and fails the test with what
// breaks them if they do not: every claim in live is Ready with one Sandbox of its own, that it
// alone owns, controls and labels, and that its status names; every other Sandbox is an unbound
// member of pool or, when orphansAllowed, a Sandbox bound to a claim since deleted (a garbage
// collector deletes it). Nothing is leaked: no Sandbox without a controller, no claim with two.
func checkBindings(t *testing.T, ns, pool string, live []string, orphansAllowed bool) bindings {
	t.Helper()
	var got bindings
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		var problems []string
		got, problems = bindingProblems(t, ns, pool, live, orphansAllowed)
		return len(problems) == 0, strings.Join(problems, "\n")
	})
	return got
}

// bindingProblems returns what breaks checkBindings' invariants now.
func bindingProblems(t *testing.T, ns, pool string, live []string, orphansAllowed bool) (bindings, []string) {
	t.Helper()
	var problems []string
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	claims := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), claims, client.InNamespace(ns)); err != nil {
		return bindings{}, []string{err.Error()}
	}
	byUID := map[types.UID]*extv1beta1.SandboxClaim{}
	for i := range claims.Items {
		byUID[claims.Items[i].UID] = &claims.Items[i]
	}
	all, err := sandboxes(t, ns)
	if err != nil {
		return bindings{}, []string{err.Error()}
	}
	var got bindings
	owned := map[types.UID][]*sandboxv1beta1.Sandbox{}
	for i := range all {
		sb := &all[i]
		ref := metav1.GetControllerOf(sb)
		switch {
		case ref == nil:
			errorf("Sandbox %s has no controller: leaked (owner references %v)", sb.Name, sb.OwnerReferences)
		case ref.Kind == "SandboxWarmPool":
			if _, bound := sb.Labels[sandboxv1beta1.ClaimUIDLabel]; bound || ref.Name != pool || len(sb.OwnerReferences) != 1 {
				errorf("Pool member %s: owner references %v, labels %v; want only pool %s and no claim-uid", sb.Name, sb.OwnerReferences, sb.Labels, pool)
			}
		case ref.Kind == "SandboxClaim":
			if len(sb.OwnerReferences) != 1 || sb.Labels[sandboxv1beta1.ClaimUIDLabel] != string(ref.UID) {
				errorf("Bound Sandbox %s: owner references %v, claim-uid %q; want one claim, labelled with its UID",
					sb.Name, sb.OwnerReferences, sb.Labels[sandboxv1beta1.ClaimUIDLabel])
			}
			if _, exists := byUID[ref.UID]; !exists {
				got.orphans++
				if !orphansAllowed {
					errorf("Sandbox %s is bound to SandboxClaim %s (uid %s), which does not exist", sb.Name, ref.Name, ref.UID)
				}
				continue
			}
			owned[ref.UID] = append(owned[ref.UID], sb)
		default:
			errorf("Sandbox %s is controlled by %s %s", sb.Name, ref.Kind, ref.Name)
		}
	}
	byName := map[string]*extv1beta1.SandboxClaim{}
	for _, c := range byUID {
		byName[c.Name] = c
	}
	for _, name := range live {
		c := byName[name]
		if c == nil {
			errorf("SandboxClaim %s does not exist", name)
			continue
		}
		sbs := owned[c.UID]
		if len(sbs) != 1 {
			var names []string
			for _, sb := range sbs {
				names = append(names, sb.Name)
			}
			errorf("SandboxClaim %s controls Sandboxes %v; want exactly one", name, names)
			continue
		}
		sb := sbs[0]
		if c.Status.Sandbox.Name != sb.Name || !hasReady(metav1.ConditionTrue, "")(c) {
			errorf("%s; want Ready with Sandbox %s", describeClaim(c), sb.Name)
		}
		if ok, desc := isBoundTo(sb, c); !ok {
			errorf("%s", desc)
		}
		if sb.Labels[sandboxv1beta1.LaunchTypeLabel] == extv1beta1.LaunchTypeWarm {
			got.warm++
		} else {
			got.cold++
		}
	}
	for uid, sbs := range owned {
		if c := byUID[uid]; len(sbs) > 1 {
			errorf("SandboxClaim %s controls %d Sandboxes", c.Name, len(sbs))
		}
	}
	return got, problems
}

func TestBurstOfClaimsAgainstAPool(t *testing.T) {
	const poolSize, claims = 100, 200
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(poolSize).Obj())
	waitForPoolReady(t, ns, "pool", poolSize)

	names, wait := createClaims(t.Context(), ns, "pool", "c", claims, claims, 0)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, ns, names)
	got := checkBindings(t, ns, "pool", names, false)
	t.Logf("%d claims: %d warm, %d cold", claims, got.warm, got.cold)
	if got.warm < poolSize {
		t.Errorf("%d claims were warm; want at least the pool's %d ready members", got.warm, poolSize)
	}
	// The pool refills to its size, with members nobody holds.
	waitForPoolReady(t, ns, "pool", poolSize)
	checkBindings(t, ns, "pool", names, false)
}

func TestClaimDeletedWhileBinding(t *testing.T) {
	const poolSize = 10
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(poolSize).Obj())
	waitForPoolReady(t, ns, "pool", poolSize)

	// Claims deleted right after their creation race the controller binding them, while live
	// claims are bound next to them.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Go(func() {
			c := testutil.MakeClaim(fmt.Sprintf("gone-%d", i), ns).WarmPool("pool").Obj()
			if err := env.Client.Create(t.Context(), c); err != nil {
				errs <- err
				return
			}
			if i%2 == 1 {
				time.Sleep(time.Duration(i) * time.Millisecond)
			}
			if err := env.Client.Delete(t.Context(), c); err != nil {
				errs <- err
			}
		})
	}
	live, waitLive := createClaims(t.Context(), ns, "pool", "live", 5, 5, 0)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := waitLive(); err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, ns, live)
	waitForPoolReady(t, ns, "pool", poolSize)
	got := checkBindings(t, ns, "pool", live, true)
	t.Logf("live claims: %d warm, %d cold; %d sandboxes bound to deleted claims (garbage-collected in a cluster)", got.warm, got.cold, got.orphans)
	framework.Consistently(t, quiet, func() (bool, string) {
		list := &extv1beta1.SandboxClaimList{}
		err := env.Client.List(t.Context(), list, client.InNamespace(ns))
		return err == nil && len(list.Items) == len(live), fmt.Sprintf("%d claims (err %v); want the %d live ones", len(list.Items), err, len(live))
	})
}

func TestControllerRestartedMidBurst(t *testing.T) {
	const poolSize, claims = 30, 60
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	var names []string
	var wait func() error
	t.Run("first controller", func(t *testing.T) {
		env.StartKubox(t, ns, nil) // stops when this subtest ends
		env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
		env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(poolSize).Obj())
		waitForPoolReady(t, ns, "pool", poolSize)
		names, wait = createClaims(context.Background(), ns, "pool", "c", claims, 4, 20*time.Millisecond)
		framework.WaitFor(t, burstTimeout, func() (bool, string) {
			all, err := sandboxes(t, ns)
			bound := 0
			for i := range all {
				if ref := metav1.GetControllerOf(&all[i]); ref != nil && ref.Kind == "SandboxClaim" {
					bound++
				}
			}
			return err == nil && bound >= 10, fmt.Sprintf("%d sandboxes bound (err %v)", bound, err)
		})
	})
	if t.Failed() {
		return
	}
	env.StartKubox(t, ns, nil)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, ns, names)
	got := checkBindings(t, ns, "pool", names, false)
	t.Logf("%d claims across a restart: %d warm, %d cold", claims, got.warm, got.cold)
	waitForPoolReady(t, ns, "pool", poolSize)
	checkBindings(t, ns, "pool", names, false)
}

func TestTwoControllersRaceForOnePool(t *testing.T) {
	const poolSize, claims = 20, 40
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	// Two replicas, as if leader election had failed: they share nothing but the API server, so
	// only its optimistic concurrency keeps them from binding one member twice.
	env.StartKubox(t, ns, nil)
	env.StartKubox(t, ns, nil)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(poolSize).Obj())
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		members, err := poolMembers(t, ns, "pool")
		return err == nil && len(members) >= poolSize, fmt.Sprintf("%d members (err %v)", len(members), err)
	})

	names, wait := createClaims(t.Context(), ns, "pool", "c", claims, claims, 0)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, ns, names)
	got := checkBindings(t, ns, "pool", names, false)
	evs := &eventsv1.EventList{}
	if err := env.Client.List(t.Context(), evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	duplicates := 0
	for _, e := range evs.Items {
		if e.Reason == sandboxclaim.EventDuplicateSandboxDeleted {
			duplicates++
		}
	}
	t.Logf("%d claims, two controllers: %d warm, %d cold; %d second sandboxes deleted", claims, got.warm, got.cold, duplicates)
}
