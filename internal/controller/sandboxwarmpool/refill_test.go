package sandboxwarmpool

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/testutil"
)

const gateKey = testNS + "/" + testPool

// gateStep is one thing that happens to a pool's refill gate, after the fake clock moved by
// after: claims take members, or a pass asks to create want members with ready Ready ones.
type gateStep struct {
	after time.Duration
	takes int
	// want > 0 asks admit; wantN and wantRetry are what it must answer.
	want, ready      int
	wantN            int
	wantRetry        time.Duration
	wantHeld         bool
	wantHeldFor      time.Duration
	checkHoldingOnly bool
}

func runGate(t *testing.T, g *refillGate, clk *clocktesting.FakePassiveClock, steps []gateStep) {
	t.Helper()
	for i, s := range steps {
		clk.SetTime(clk.Now().Add(s.after))
		for range s.takes {
			g.taken(gateKey)
		}
		if s.checkHoldingOnly {
			held, left := g.holding(gateKey)
			if held != s.wantHeld || left != s.wantHeldFor {
				t.Errorf("step %d: holding() = %v, %v; want %v, %v", i, held, left, s.wantHeld, s.wantHeldFor)
			}
			continue
		}
		if s.want == 0 {
			continue
		}
		n, retry := g.admit(gateKey, s.want, s.ready)
		if n != s.wantN || retry != s.wantRetry {
			t.Errorf("step %d: admit(%d, ready %d) = %d, %v; want %d, %v", i, s.want, s.ready, n, retry, s.wantN, s.wantRetry)
		}
	}
}

// TestRefillHold drives the hold with a fake clock: takes re-arm it, nothing is created while it
// runs, the whole deficit is admitted once it ends, and it is bounded.
func TestRefillHold(t *testing.T) {
	const delay = 200 * time.Millisecond
	cases := map[string][]gateStep{
		"no take: the deficit is created at once": {
			{want: 5, ready: 3, wantN: 5},
		},
		"a take holds the refill for one delay": {
			{takes: 1, want: 1, ready: 9, wantN: 0, wantRetry: delay},
			{after: 150 * time.Millisecond, want: 1, ready: 9, wantN: 0, wantRetry: 50 * time.Millisecond},
			{after: 50 * time.Millisecond, want: 1, ready: 9, wantN: 1},
		},
		"every take re-arms the hold; then the whole deficit goes in one batch": {
			{takes: 1, want: 1, ready: 9, wantRetry: delay},
			{after: 100 * time.Millisecond, takes: 2, want: 3, ready: 7, wantRetry: delay},
			{after: 150 * time.Millisecond, takes: 1, want: 4, ready: 6, wantRetry: delay},
			{after: 199 * time.Millisecond, want: 4, ready: 6, wantRetry: time.Millisecond},
			{after: time.Millisecond, want: 4, ready: 6, wantN: 4},
		},
		"a hold never outlasts five delays": {
			{takes: 1, want: 1, ready: 99, wantRetry: delay},
			{after: 150 * time.Millisecond, takes: 1},
			{after: 150 * time.Millisecond, takes: 1},
			{after: 150 * time.Millisecond, takes: 1},
			{after: 150 * time.Millisecond, takes: 1},
			{after: 150 * time.Millisecond, takes: 1, want: 6, ready: 94, wantRetry: 200 * time.Millisecond},
			{after: 150 * time.Millisecond, takes: 1, want: 7, ready: 93, wantRetry: 100 * time.Millisecond},
			{after: 100 * time.Millisecond, want: 7, ready: 93, wantN: 7},
			// The next take starts a new hold.
			{takes: 1, want: 8, ready: 92, wantRetry: delay},
		},
		"a drained pool waits one delay at most, whatever else is taken": {
			{takes: 1, want: 1, ready: 9, wantRetry: delay},
			{after: 150 * time.Millisecond, takes: 9, want: 10, ready: 0, wantRetry: delay},
			{after: 100 * time.Millisecond, takes: 1, want: 10, ready: 0, wantRetry: 100 * time.Millisecond},
			{after: 100 * time.Millisecond, want: 10, ready: 0, wantN: 10},
		},
		"holding reports the hold": {
			{checkHoldingOnly: true},
			{takes: 1, checkHoldingOnly: true, wantHeld: true, wantHeldFor: delay},
			{after: delay, checkHoldingOnly: true},
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(testNow)
			runGate(t, newRefillGate(clk, delay, 0), clk, steps)
		})
	}
}

// TestRefillHoldOff: with no delay, takes hold nothing and the gate keeps no state.
func TestRefillHoldOff(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(testNow)
	g := newRefillGate(clk, 0, 0)
	runGate(t, g, clk, []gateStep{{takes: 3, want: 3, ready: 0, wantN: 3}})
	if len(g.pools) != 0 {
		t.Errorf("the gate keeps %d pools, want none", len(g.pools))
	}
}

// TestRefillBucket drives the token bucket: it starts full with max(1, rate) tokens, refills at
// rate per second and says when the next member may be created.
func TestRefillBucket(t *testing.T) {
	cases := map[string]struct {
		rate  float64
		steps []gateStep
	}{
		"capacity is the rate; the rest waits for tokens": {rate: 10, steps: []gateStep{
			{want: 25, wantN: 10, wantRetry: 100 * time.Millisecond},
			{after: 100 * time.Millisecond, want: 15, wantN: 1, wantRetry: 100 * time.Millisecond},
			{after: 500 * time.Millisecond, want: 14, wantN: 5, wantRetry: 100 * time.Millisecond},
			{after: time.Hour, want: 100, wantN: 10, wantRetry: 100 * time.Millisecond},
		}},
		"below one per second the bucket still holds one member": {rate: 0.5, steps: []gateStep{
			{want: 3, wantN: 1, wantRetry: 2 * time.Second},
			{after: time.Second, want: 2, wantN: 0, wantRetry: time.Second},
			{after: time.Second, want: 2, wantN: 1, wantRetry: 2 * time.Second},
		}},
		"unpaced": {rate: 0, steps: []gateStep{
			{want: 1000, wantN: 1000},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(testNow)
			runGate(t, newRefillGate(clk, 0, tc.rate), clk, tc.steps)
		})
	}
}

// TestRefillHoldThenBucket: the batch that ends a hold is still paced by the bucket, and the hold
// does not drain the bucket.
func TestRefillHoldThenBucket(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(testNow)
	g := newRefillGate(clk, time.Second, 4)
	runGate(t, g, clk, []gateStep{
		{takes: 6, want: 6, ready: 4, wantRetry: time.Second},
		{after: time.Second, want: 6, ready: 4, wantN: 4, wantRetry: 250 * time.Millisecond},
		{after: 500 * time.Millisecond, want: 2, ready: 4, wantN: 2},
	})
	g.forget(gateKey)
	if len(g.pools) != 0 {
		t.Errorf("forget left %d pools", len(g.pools))
	}
}

// TestMemberHandlerHoldsOnTake: the Sandbox event handler holds a pool's refill when a claim takes
// one of its members, and for no other change of a member.
func TestMemberHandlerHoldsOnTake(t *testing.T) {
	poolRef := metav1.OwnerReference{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool",
		Name: testPool, UID: "pool-uid", Controller: ptr.To(true)}
	claimRef := metav1.OwnerReference{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim",
		Name: "claim", UID: "claim-uid", Controller: ptr.To(true)}
	owned := func(ref metav1.OwnerReference) *sandboxv1beta1.Sandbox {
		sb := testutil.MakeSandbox("m", testNS).Obj()
		sb.OwnerReferences = []metav1.OwnerReference{ref}
		return sb
	}
	deleting := owned(claimRef)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	cases := map[string]struct {
		old, new *sandboxv1beta1.Sandbox
		wantHeld bool
	}{
		"a claim binds a member":          {old: owned(poolRef), new: owned(claimRef), wantHeld: true},
		"a member's status changes":       {old: owned(poolRef), new: owned(poolRef)},
		"a claimed sandbox changes":       {old: owned(claimRef), new: owned(claimRef)},
		"a member goes as it is released": {old: owned(poolRef), new: deleting},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(testNow)
			h := &memberHandler{owner: handler.Funcs{}, orphans: handler.Funcs{},
				expectations: inflight.NewExpectations(clk, time.Minute), refill: newRefillGate(clk, time.Second, 0)}
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}, nil)
			if held, _ := h.refill.holding(gateKey); held != tc.wantHeld {
				t.Errorf("pool held = %v, want %v", held, tc.wantHeld)
			}
		})
	}
}
