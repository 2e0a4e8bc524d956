package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// The storm scenarios (issue #17) create claims as fast as the API server takes them while the
// controller is killed and replaced, then check by listing that no sandbox was bound twice, no
// claim was lost or left waiting, and nothing leaked once the pool has settled.
var (
	stormClaims   = flag.Int("storm-claims", 1000, "claims of the storm scenarios")
	stormKills    = flag.Int("storm-kills", 3, "times the storm scenarios kill the controller (the leader, in storm-ha)")
	stormCreators = flag.Int("storm-creators", 100, "concurrent clients creating the storm's claims")
)

// leaseID is the Lease the storm-ha replicas elect their leader with.
const leaseID = "kubox-bench"

func (b *bench) stormScenario(ha bool) scenario {
	s := scenario{name: "storm", about: fmt.Sprintf("%d claims at once from %d clients, the controller killed and restarted %d times",
		*stormClaims, *stormCreators, *stormKills)}
	if ha {
		s.name = "storm-ha"
		s.about = fmt.Sprintf("%d claims at once from %d clients, two leader-elected replicas, the leader killed %d times and replaced",
			*stormClaims, *stormCreators, *stormKills)
	}
	s.load = func(ctx context.Context, b *bench) ([]string, map[string]time.Time, error) {
		st := &storm{b: b, ha: ha}
		b.check = st.check
		return st.run(ctx)
	}
	return s
}

// storm is one run of a storm scenario.
type storm struct {
	b  *bench
	ha bool

	// replicas are the controllers running now; the storm stops them in place of b.stopKubox.
	replicas []*replica
	kills    []string
	// seen follows the claims from the load until the check.
	seen         *readyBindings
	stopWatching func()
}

// replica is one kubox-controller process, in this one.
type replica struct {
	stop    func()
	elected <-chan struct{}
}

// run replaces the benchmark's controller with the storm's replicas, creates the claims from
// stormCreators clients, and kills a controller each time another share of the claims is Ready.
func (st *storm) run(ctx context.Context) ([]string, map[string]time.Time, error) {
	b := st.b
	var err error
	if st.seen, st.stopWatching, err = watchBindings(ctx, b.w); err != nil {
		return nil, nil, err
	}
	b.stopKubox()
	b.stopKubox = st.stopAll
	for range st.wanted() {
		if err := st.startReplica(ctx); err != nil {
			return nil, nil, err
		}
	}
	names := make([]string, *stormClaims)
	for i := range names {
		b.seq++
		names[i] = fmt.Sprintf("c-%06d", b.seq)
	}
	killed := make(chan error, 1)
	go func() { killed <- st.killDuringStorm(ctx, names) }()
	created, err := st.create(ctx, names)
	return names, created, errors.Join(err, <-killed)
}

// wanted is how many replicas run at once.
func (st *storm) wanted() []struct{} { return make([]struct{}, 1+boolInt(st.ha)) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// create creates the claims from stormCreators clients as fast as the API server answers.
func (st *storm) create(ctx context.Context, names []string) (map[string]time.Time, error) {
	work := make(chan string, len(names))
	for _, n := range names {
		work <- n
	}
	close(work)
	created := make(map[string]time.Time, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, *stormCreators)
	for range *stormCreators {
		wg.Go(func() {
			for name := range work {
				t := time.Now()
				if err := st.b.create(ctx, name); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				created[name] = t
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	return created, <-errs
}

// killDuringStorm kills a controller each time another 1/(kills+1) of the claims is Ready, and
// starts a new one in its place: killed, the controller stops at once, mid-request, without
// releasing its Lease, as a crashed process would.
func (st *storm) killDuringStorm(ctx context.Context, names []string) error {
	last := 0
	for i := range *stormKills {
		// The next share, and at least one claim the last replacement made Ready: each kill
		// interrupts a controller that was at work, while claims still wait.
		want := min(max((i+1)*len(names)/(*stormKills+1), last+1), len(names)-1)
		if err := st.waitReadyCount(ctx, names, want); err != nil {
			return fmt.Errorf("before kill %d: %w", i+1, err)
		}
		victim, err := st.leader(ctx)
		if err != nil {
			return err
		}
		killedAt := time.Now()
		st.replicas[victim].stop()
		st.replicas = append(st.replicas[:victim], st.replicas[victim+1:]...)
		if err := st.startReplica(ctx); err != nil {
			return err
		}
		last = st.b.w.count(names)
		note := fmt.Sprintf("kill %d with %d of %d claims Ready", i+1, last, len(names))
		if st.ha {
			if _, err := st.leader(ctx); err != nil {
				return err
			}
			note += fmt.Sprintf(": a new leader %.1fs later", time.Since(killedAt).Seconds())
		} else {
			note += fmt.Sprintf(": a new controller synced %.1fs later", time.Since(killedAt).Seconds())
		}
		st.kills = append(st.kills, note)
	}
	return nil
}

// startReplica starts one more controller, shut down without grace when killed and, in storm-ha,
// a candidate for the Lease that it never releases.
func (st *storm) startReplica(ctx context.Context) error {
	stop, mgr, err := startKubox(ctx, st.b.cl, st.b.writes, st.b.o, func(_ *configv1alpha1.ControllerConfiguration, o *ctrl.Options) {
		o.GracefulShutdownTimeout = ptr.To(time.Duration(0))
		o.Controller.SkipNameValidation = ptr.To(true) // the killed replica's names stay registered
		o.LeaderElection = st.ha
		o.LeaderElectionID = leaseID
		o.LeaderElectionNamespace = ns
		o.LeaderElectionReleaseOnCancel = false
	})
	if err != nil {
		return err
	}
	st.replicas = append(st.replicas, &replica{stop: stop, elected: mgr.Elected()})
	return nil
}

// leader returns the index of the replica that leads, waiting for one.
func (st *storm) leader(ctx context.Context) (int, error) {
	deadline := time.After(st.b.o.readyTimeout)
	for {
		for i, r := range st.replicas {
			select {
			case <-r.elected:
				return i, nil
			default:
			}
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return 0, fmt.Errorf("no replica leads after %v", st.b.o.readyTimeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (st *storm) stopAll() {
	for _, r := range st.replicas {
		r.stop()
	}
	st.replicas = nil
}

// waitReadyCount waits until at least n of names are Ready.
func (st *storm) waitReadyCount(ctx context.Context, names []string, n int) error {
	deadline := time.After(st.b.o.readyTimeout)
	for st.b.w.count(names) < n {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return fmt.Errorf("%d of %d claims Ready after %v, want %d", st.b.w.count(names), len(names), st.b.o.readyTimeout, n)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// count is how many of names have been seen Ready.
func (w *watcher) count(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := w.ready[name]; ok {
			n++
		}
	}
	return n
}

// readyBindings records, from the benchmark's claim informer, every Sandbox each claim was seen
// Ready with and whether it was seen to lose Ready: a claim is Ready once, with one Sandbox.
type readyBindings struct {
	mu      sync.Mutex
	bound   map[string]map[string]bool
	dropped map[string]bool
}

// watchBindings adds a handler to w's claim informer until the returned function removes it.
func watchBindings(ctx context.Context, w *watcher) (*readyBindings, func(), error) {
	inf, err := w.cache.GetInformer(ctx, &extv1beta1.SandboxClaim{})
	if err != nil {
		return nil, nil, err
	}
	r := &readyBindings{bound: map[string]map[string]bool{}, dropped: map[string]bool{}}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: r.observe, UpdateFunc: func(_, n any) { r.observe(n) },
	})
	if err != nil {
		return nil, nil, err
	}
	return r, func() { _ = inf.RemoveEventHandler(reg) }, nil
}

func (r *readyBindings) observe(obj any) {
	claim, ok := obj.(*extv1beta1.SandboxClaim)
	if !ok {
		return
	}
	ready := meta.IsStatusConditionTrue(claim.Status.Conditions, extv1beta1.ClaimConditionReady)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ready && r.bound[claim.Name] == nil:
		r.bound[claim.Name] = map[string]bool{claim.Status.Sandbox.Name: true}
	case ready:
		r.bound[claim.Name][claim.Status.Sandbox.Name] = true
	case r.bound[claim.Name] != nil && claim.DeletionTimestamp == nil:
		r.dropped[claim.Name] = true
	}
}

// rebound counts the claims seen Ready with two Sandboxes or losing Ready.
func (r *readyBindings) rebound() (twice, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sbs := range r.bound {
		if len(sbs) > 1 {
			twice++
		}
	}
	return twice, len(r.dropped)
}

// invariants is what the storm's check counts; every field but the totals must be zero.
type invariants struct {
	sandboxes, pods, claimed, pool int

	boundTwice     int // Sandboxes named by two claims' status, or with two claim owner references
	readyTwice     int // claims seen Ready with two Sandboxes, or losing Ready
	lost           int // claims missing from the API server
	stuck          int // claims not Ready with a Sandbox of their own
	leakedSandbox  int // Sandboxes controlled by neither a live claim nor the pool
	leakedPod      int // Pods controlled by no live Sandbox
	sandboxPodless int // Sandboxes without exactly one Pod
}

func (v invariants) broken() bool {
	return v.boundTwice+v.readyTwice+v.lost+v.stuck+v.leakedSandbox+v.leakedPod+v.sandboxPodless > 0
}

func (v invariants) settled() bool {
	return !v.broken() && v.sandboxes == v.claimed+v.pool && v.pods == v.sandboxes
}

// check waits for the pool to refill and the counts to settle (Sandboxes = claimed + pool, Pods =
// Sandboxes, nothing orphaned), then reports the invariants; a broken one fails the benchmark.
func (st *storm) check(ctx context.Context, names []string) (string, error) {
	defer st.stopWatching()
	if err := st.b.waitPoolFull(ctx); err != nil {
		return "", err
	}
	start := time.Now()
	var v invariants
	var err error
	for deadline := start.Add(st.b.o.readyTimeout); ; {
		if v, err = st.count(ctx, names); err != nil {
			return "", err
		}
		if v.settled() || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	var r strings.Builder
	for _, k := range st.kills {
		fmt.Fprintf(&r, "- %s\n", k)
	}
	fmt.Fprintf(&r, "\nsettled %.1fs after the pool refilled: %d Sandboxes (%d claimed + pool of %d), %d Pods\n\n",
		time.Since(start).Seconds(), v.sandboxes, v.claimed, v.pool, v.pods)
	fmt.Fprintf(&r, "| invariant | found |\n|---|---|\n")
	for _, row := range []struct {
		what string
		n    int
	}{
		{"Sandboxes bound twice (named by two claims, or two claim owners)", v.boundTwice},
		{"claims Ready twice (two Sandboxes, or Ready lost; watched)", v.readyTwice},
		{"claims lost", v.lost},
		{"claims stuck (not Ready with a Sandbox of their own)", v.stuck},
		{"leaked Sandboxes (no live claim or pool controls them)", v.leakedSandbox},
		{"leaked Pods (no live Sandbox controls them)", v.leakedPod},
		{"Sandboxes without exactly one Pod", v.sandboxPodless},
	} {
		fmt.Fprintf(&r, "| %s | %d |\n", row.what, row.n)
	}
	r.WriteString("\n")
	if !v.settled() {
		return "", fmt.Errorf("the storm broke an invariant or did not settle within %v:\n%s", st.b.o.readyTimeout, r.String())
	}
	return r.String(), nil
}

// count lists the claims, Sandboxes and Pods of the namespace and counts what breaks the
// invariants.
func (st *storm) count(ctx context.Context, names []string) (invariants, error) {
	c := st.b.c
	claims := &extv1beta1.SandboxClaimList{}
	sbs := &sandboxv1beta1.SandboxList{}
	pods := &corev1.PodList{}
	for _, l := range []client.ObjectList{claims, sbs, pods} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return invariants{}, err
		}
	}
	v := invariants{sandboxes: len(sbs.Items), pods: len(pods.Items), pool: st.b.o.pool}
	twice, dropped := st.seen.rebound()
	v.readyTwice = twice + dropped
	claimByUID := map[types.UID]*extv1beta1.SandboxClaim{}
	claimByName := map[string]*extv1beta1.SandboxClaim{}
	for i := range claims.Items {
		claimByUID[claims.Items[i].UID] = &claims.Items[i]
		claimByName[claims.Items[i].Name] = &claims.Items[i]
	}
	sbByName := map[string]*sandboxv1beta1.Sandbox{}
	for i := range sbs.Items {
		sb := &sbs.Items[i]
		sbByName[sb.Name] = sb
		v.checkSandbox(sb, claimByUID)
	}
	namedBy := map[string]int{}
	for _, n := range names {
		claim := claimByName[n]
		if claim == nil {
			v.lost++
			continue
		}
		sb := sbByName[claim.Status.Sandbox.Name]
		ready := meta.IsStatusConditionTrue(claim.Status.Conditions, extv1beta1.ClaimConditionReady)
		if !ready || sb == nil || metav1.GetControllerOf(sb) == nil || metav1.GetControllerOf(sb).UID != claim.UID {
			v.stuck++
			continue
		}
		if namedBy[sb.Name]++; namedBy[sb.Name] == 2 {
			v.boundTwice++
		}
		v.claimed++
	}
	v.checkPods(pods.Items, sbs.Items)
	return v, nil
}

// checkSandbox counts sb as bound twice when two claims own it, and as leaked when neither a live
// claim nor the pool controls it.
func (v *invariants) checkSandbox(sb *sandboxv1beta1.Sandbox, claims map[types.UID]*extv1beta1.SandboxClaim) {
	claimOwners := 0
	for _, ref := range sb.OwnerReferences {
		if ref.Kind == "SandboxClaim" {
			claimOwners++
		}
	}
	if claimOwners > 1 {
		v.boundTwice++
	}
	ref := metav1.GetControllerOf(sb)
	switch {
	case ref == nil:
		v.leakedSandbox++
	case ref.Kind == "SandboxClaim":
		if claims[ref.UID] == nil {
			v.leakedSandbox++
		}
	case ref.Kind != "SandboxWarmPool" || ref.Name != "bench" || sb.Labels[sandboxv1beta1.ClaimUIDLabel] != "":
		v.leakedSandbox++
	}
}

// checkPods counts the Pods no live Sandbox controls and the Sandboxes without exactly one Pod.
func (v *invariants) checkPods(pods []corev1.Pod, sbs []sandboxv1beta1.Sandbox) {
	podsOf := map[types.UID]int{}
	for i := range pods {
		if ref := metav1.GetControllerOf(&pods[i]); ref != nil && ref.Kind == "Sandbox" {
			podsOf[ref.UID]++
		}
	}
	live := 0
	for i := range sbs {
		n := podsOf[sbs[i].UID]
		live += n
		if n != 1 {
			v.sandboxPodless++
		}
	}
	v.leakedPod = len(pods) - live
}
