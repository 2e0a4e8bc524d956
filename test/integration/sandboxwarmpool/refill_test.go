package sandboxwarmpool

import (
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// TestRefillYieldsToClaims binds members one after another, closer together than the replenish
// delay, and checks from the API server's own sequence of changes that the pool creates no member
// while the binds keep coming, nor before the delay has passed since the last one; then that it
// refills to spec.replicas, creating exactly the members taken.
func TestRefillYieldsToClaims(t *testing.T) {
	t.Parallel()
	const replicas, taken = 10, 6
	// The delay is long next to the gaps between binds, so that a slow machine delaying one
	// bind's event more than the next one's cannot end the hold during the burst.
	const delay, gap = 3 * time.Second, 300 * time.Millisecond
	ns := startController(t, func(cfg *configv1alpha1.ControllerConfiguration) {
		cfg.Controllers.SandboxWarmPool.ReplenishDelay = &metav1.Duration{Duration: delay}
	})
	env.StartKubelet(t, ns)
	pool := createFullPool(t, ns, testutil.MakePool("pool", ns, "tpl").Replicas(replicas))

	created := watchCreations(t, ns)
	var lastBind time.Time
	for i, m := range members(t, ns, pool)[:taken] {
		if i > 0 {
			time.Sleep(gap)
		}
		lastBind = time.Now()
		bindFresh(t, m)
		if got := created.times(); len(got) > 0 {
			t.Fatalf("The pool created a member while claims kept binding (after %d of %d binds)", i+1, taken)
		}
	}

	waitForPool(t, ns, "pool", full(replicas))
	got := created.times()
	if len(got) != taken {
		t.Errorf("The pool created %d members, want %d (one per member taken)", len(got), taken)
	}
	// The pool hears of the last bind no sooner than the test sent it, so its hold ends no sooner
	// than a delay after that.
	if first := got[0]; first.Before(lastBind.Add(delay)) {
		t.Errorf("The first member was created %v after the last bind was sent, before the replenish delay of %v had passed",
			first.Sub(lastBind), delay)
	}
}

// creationWatch records when each Sandbox created in a namespace was first seen.
type creationWatch struct {
	mu   sync.Mutex
	seen []time.Time
}

func (c *creationWatch) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.seen...)
}

// watchCreations starts a sandboxWatch on ns whose check records the time of every Sandbox
// added from now on.
func watchCreations(t *testing.T, ns string) *creationWatch {
	t.Helper()
	c := &creationWatch{}
	sw := watchSandboxes(t, ns)
	known := sw.addedCount()
	sw.setCheck(func([]*sandboxv1beta1.Sandbox) string {
		// Runs under sw's lock after every change; sw.added is current.
		if n := sw.added; n > known {
			c.mu.Lock()
			for range n - known {
				c.seen = append(c.seen, time.Now())
			}
			c.mu.Unlock()
			known = n
		}
		return ""
	})
	t.Cleanup(func() { sw.verify(t) })
	return c
}
