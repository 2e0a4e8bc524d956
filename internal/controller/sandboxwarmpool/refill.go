package sandboxwarmpool

import (
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// holdCapFactor bounds a hold to this many replenish delays from the take that started it, so a
// pool whose claims never pause is still refilled, in batches, instead of draining.
const holdCapFactor = 5

// refillGate decides when a pool may create the members it lacks and how many: it makes refill
// yield to claims. A claim binding a member costs two API writes; refilling that member costs a
// Sandbox create, its Pod, the Pod's scheduling and several status writes. Sent while claims keep
// coming, the refill writes queue in the API server ahead of the claims' own. So each member a
// claim takes re-arms a hold of replenishDelay on its pool, during which the pool creates nothing;
// when the hold runs out the pool creates its whole deficit in one batch (within maxBatchSize).
// A hold never outlasts holdCapFactor delays, nor one delay once the pool has no Ready member
// left. Apart from holds, a per-pool token bucket (maxRefillRate members per second, holding at
// most max(1, rate)) paces the creations when a rate is set. It is safe for concurrent use: the
// Sandbox event handler reports takes, reconcile passes ask.
type refillGate struct {
	clock clock.PassiveClock
	// delay is the replenish delay; 0 turns holds off.
	delay time.Duration
	// rate is the bucket's members per second; 0 turns pacing off.
	rate float64

	mu    sync.Mutex
	pools map[string]*poolRefill
}

// poolRefill is one pool's hold and bucket.
type poolRefill struct {
	// started is when the running hold began, until when it ends; no hold runs from until on.
	started, until time.Time
	// drainedAt is when a pass first saw the pool without a Ready member during the hold.
	drainedAt time.Time
	// tokens is the bucket's content at filledAt.
	tokens   float64
	filledAt time.Time
}

func newRefillGate(clk clock.PassiveClock, delay time.Duration, rate float64) *refillGate {
	return &refillGate{clock: clk, delay: delay, rate: rate, pools: map[string]*poolRefill{}}
}

// capacity is the most tokens the bucket holds: a whole member even below one per second.
func (g *refillGate) capacity() float64 { return max(1, g.rate) }

func (g *refillGate) pool(key string, now time.Time) *poolRefill {
	p := g.pools[key]
	if p == nil {
		p = &poolRefill{tokens: g.capacity(), filledAt: now}
		g.pools[key] = p
	}
	return p
}

// taken records that a claim took one of the members of the pool with key: it re-arms the pool's
// hold, within the hold's bounds.
func (g *refillGate) taken(key string) {
	if g.delay <= 0 {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pool(key, now)
	if !now.Before(p.until) {
		p.started, p.drainedAt = now, time.Time{}
	}
	p.until = latest(p.until, earliest(now.Add(g.delay), p.holdBound(g.delay)))
}

// holdBound is the latest the running hold may end.
func (p *poolRefill) holdBound(delay time.Duration) time.Time {
	bound := p.started.Add(holdCapFactor * delay)
	if !p.drainedAt.IsZero() {
		bound = earliest(bound, p.drainedAt.Add(delay))
	}
	return bound
}

// admit returns how many of the want members the pool with key may create now (at most want),
// and, when that is fewer than want, how soon it may create more. ready is how many Ready
// members the pass observed.
func (g *refillGate) admit(key string, want, ready int) (n int, retryIn time.Duration) {
	if want <= 0 {
		return 0, 0
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pools[key]
	if p == nil && g.rate <= 0 {
		return want, 0
	}
	p = g.pool(key, now)
	if now.Before(p.until) {
		if ready == 0 && p.drainedAt.IsZero() {
			p.drainedAt = now
			p.until = earliest(p.until, p.holdBound(g.delay))
		}
		if now.Before(p.until) {
			return 0, p.until.Sub(now)
		}
	}
	if g.rate <= 0 {
		delete(g.pools, key)
		return want, 0
	}
	p.tokens = min(g.capacity(), p.tokens+now.Sub(p.filledAt).Seconds()*g.rate)
	p.filledAt = now
	n = min(want, int(math.Floor(p.tokens)))
	p.tokens -= float64(n)
	if n < want {
		retryIn = time.Duration(math.Ceil((1 - p.tokens) / g.rate * float64(time.Second)))
	}
	return n, retryIn
}

// holding reports whether the pool with key is in a hold, and for how much longer.
func (g *refillGate) holding(key string) (bool, time.Duration) {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.pools[key]; p != nil && now.Before(p.until) {
		return true, p.until.Sub(now)
	}
	return false, 0
}

// forget drops what the gate knows of the pool with key, once the pool is gone.
func (g *refillGate) forget(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pools, key)
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
