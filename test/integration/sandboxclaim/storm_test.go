package sandboxclaim

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// The storm tests are issue #17's benchmark scenario (test/bench/claims -only storm) with smaller
// numbers: claims keep coming while the controller is killed and replaced, and afterwards no
// sandbox is bound twice, no claim is lost or stuck, and nothing is leaked.
const stormPool, stormClaims = 30, 60

// leaseDuration is the storm's leader Lease: a killed leader's successor waits this long.
const leaseDuration = 3 * time.Second

func TestClaimStormWithControllerRestarts(t *testing.T) {
	const restarts = 2
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	replica := env.StartKuboxReplica(t, ns, nil)
	seen := watchBindings(t, ns)
	names, wait := startStorm(t, ns)

	for i := range restarts {
		waitBound(t, ns, (i+1)*stormClaims/(restarts+2))
		replica.Kill()
		logProgress(t, ns, "killed the controller")
		replica = env.StartKuboxReplica(t, ns, nil)
	}
	settleStorm(t, ns, names, wait, seen)
}

func TestClaimStormWithLeaderHandOff(t *testing.T) {
	const handOffs = 2
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	elect := framework.WithLeaderElection(ns, "kubox-storm", leaseDuration)
	replicas := []*framework.Replica{env.StartKuboxReplica(t, ns, nil, elect), env.StartKuboxReplica(t, ns, nil, elect)}
	seen := watchBindings(t, ns)
	names, wait := startStorm(t, ns)

	for i := range handOffs {
		waitBound(t, ns, (i+1)*stormClaims/(handOffs+2))
		leader := waitLeader(t, replicas)
		replicas[leader].Kill()
		logProgress(t, ns, fmt.Sprintf("killed leader %d", leader))
		// The standby takes over once the killed leader's Lease expires; a new standby joins.
		replicas[leader] = env.StartKuboxReplica(t, ns, nil, elect)
	}
	settleStorm(t, ns, names, wait, seen)
}

// startStorm creates the template and the pool, waits for the pool to be full, and starts
// creating stormClaims claims from 4 clients at a pace that spreads them over the restarts.
func startStorm(t *testing.T, ns string) ([]string, func() error) {
	t.Helper()
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(stormPool).Obj())
	waitForPoolReady(t, ns, "pool", stormPool)
	return createClaims(context.Background(), ns, "pool", "c", stormClaims, 4, 50*time.Millisecond)
}

// settleStorm waits for the storm's claims to be created and Ready and for the pool to refill,
// then checks the storm's invariants.
func settleStorm(t *testing.T, ns string, names []string, wait func() error, seen *readyBindings) {
	t.Helper()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	waitAllReady(t, ns, names)
	waitForPoolReady(t, ns, "pool", stormPool)
	got := checkBindings(t, ns, "pool", names, false)
	for _, p := range seen.problems() {
		t.Error(p)
	}
	all, err := sandboxes(t, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != stormClaims+stormPool {
		t.Errorf("%d Sandboxes after the storm; want %d claimed + %d pool members", len(all), stormClaims, stormPool)
	}
	collectable := checkPods(t, ns, all)
	t.Logf("%d claims: %d warm, %d cold; %d Sandboxes; %d Pods of deleted Sandboxes (garbage-collected in a cluster)",
		stormClaims, got.warm, got.cold, len(all), collectable)
}

// waitBound waits until at least n Sandboxes are bound to claims.
func waitBound(t *testing.T, ns string, n int) {
	t.Helper()
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		all, err := sandboxes(t, ns)
		bound := 0
		for i := range all {
			if ref := metav1.GetControllerOf(&all[i]); ref != nil && ref.Kind == "SandboxClaim" {
				bound++
			}
		}
		return err == nil && bound >= n, fmt.Sprintf("%d sandboxes bound, want %d (err %v)", bound, n, err)
	})
}

// logProgress logs how far the storm is: claims that exist and those Ready.
func logProgress(t *testing.T, ns, what string) {
	t.Helper()
	list := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	ready := 0
	for i := range list.Items {
		if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, extv1beta1.ClaimConditionReady) {
			ready++
		}
	}
	t.Logf("%s: %d claims, %d Ready", what, len(list.Items), ready)
}

// waitLeader returns the index of the replica that leads.
func waitLeader(t *testing.T, replicas []*framework.Replica) int {
	t.Helper()
	leader := -1
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		for i, r := range replicas {
			select {
			case <-r.Elected():
				leader = i
				return true, ""
			default:
			}
		}
		return false, "no replica leads"
	})
	return leader
}

// checkPods checks that every Pod of ns belongs to a Sandbox and every Sandbox has one Pod, and
// returns how many Pods belong to Sandboxes since deleted (the test API server runs no garbage
// collector).
func checkPods(t *testing.T, ns string, all []sandboxv1beta1.Sandbox) int {
	t.Helper()
	pods := &corev1.PodList{}
	if err := env.Client.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	live := map[types.UID]bool{}
	for i := range all {
		live[all[i].UID] = true
	}
	podsOf := map[types.UID]int{}
	collectable := 0
	for i := range pods.Items {
		ref := metav1.GetControllerOf(&pods.Items[i])
		switch {
		case ref == nil || ref.Kind != "Sandbox":
			t.Errorf("Pod %s is not controlled by a Sandbox: leaked (owner references %v)", pods.Items[i].Name, pods.Items[i].OwnerReferences)
		case live[ref.UID]:
			podsOf[ref.UID]++
		default:
			collectable++
		}
	}
	for i := range all {
		if n := podsOf[all[i].UID]; n != 1 {
			t.Errorf("Sandbox %s has %d Pods; want 1", all[i].Name, n)
		}
	}
	return collectable
}

// readyBindings records, from a watch, every Sandbox each claim was seen Ready with and whether
// it was ever seen to lose Ready: a claim is Ready once, with one Sandbox, for good.
type readyBindings struct {
	mu      sync.Mutex
	bound   map[string]map[string]bool
	dropped map[string]bool
}

// watchBindings follows the claims of ns until the test ends.
func watchBindings(t *testing.T, ns string) *readyBindings {
	t.Helper()
	r := &readyBindings{bound: map[string]map[string]bool{}, dropped: map[string]bool{}}
	watchClaims(t, ns, r.observe)
	return r
}

// watchClaims calls observe with every version of a claim of ns that a watch delivers, until the
// test ends.
func watchClaims(t *testing.T, ns string, observe func(*extv1beta1.SandboxClaim)) {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(t.Context(), &extv1beta1.SandboxClaimList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range w.ResultChan() {
			if claim, ok := ev.Object.(*extv1beta1.SandboxClaim); ok {
				observe(claim)
			}
		}
	})
	t.Cleanup(func() {
		w.Stop()
		wg.Wait()
	})
}

func (r *readyBindings) observe(claim *extv1beta1.SandboxClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ready := meta.IsStatusConditionTrue(claim.Status.Conditions, extv1beta1.ClaimConditionReady)
	switch {
	case ready && r.bound[claim.Name] == nil:
		r.bound[claim.Name] = map[string]bool{claim.Status.Sandbox.Name: true}
	case ready:
		r.bound[claim.Name][claim.Status.Sandbox.Name] = true
	case r.bound[claim.Name] != nil:
		r.dropped[claim.Name] = true
	}
}

// problems lists the claims seen Ready with two Sandboxes, or losing Ready, and the Sandboxes
// seen bound to two claims.
func (r *readyBindings) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	claimOf := map[string]string{}
	for claim, sbs := range r.bound {
		if len(sbs) != 1 {
			out = append(out, fmt.Sprintf("claim %s was Ready with Sandboxes %v", claim, sbs))
		}
		for sb := range sbs {
			if other, ok := claimOf[sb]; ok {
				out = append(out, fmt.Sprintf("Sandbox %s was named Ready by claims %s and %s", sb, other, claim))
			}
			claimOf[sb] = claim
		}
	}
	for claim := range r.dropped {
		out = append(out, fmt.Sprintf("claim %s lost Ready after it had it", claim))
	}
	return out
}
