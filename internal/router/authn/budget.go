package authn

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Defaults of BudgetConfig: generous for real clients, whose tokens are reviewed once per
// cache period, and small enough that random tokens cannot load the API server.
const (
	DefaultReviewQPS                  = 20
	DefaultReviewBurst                = 40
	DefaultReviewMaxInflight          = 8
	DefaultReviewQPSPerClient         = 2
	DefaultReviewBurstPerClient       = 10
	DefaultReviewMaxInflightPerClient = 2
)

// Scopes of a LimitedError, also the scope label of sandbox_router_tokenreviews_limited_total.
const (
	// ScopeClient: the client (IP address) used up its own share.
	ScopeClient = "client"
	// ScopeRouter: all clients together used up the router's budget.
	ScopeRouter = "router"
)

// BudgetConfig bounds the TokenReviews of tokens the router has not seen accepted: the ones an
// attacker can send in any number. 0 in a field means unlimited.
type BudgetConfig struct {
	// QPS and Burst: a token bucket shared by all clients.
	QPS   float64
	Burst int
	// MaxInflight: such reviews at once, all clients together.
	MaxInflight int
	// QPSPerClient and BurstPerClient: a token bucket per client IP address.
	QPSPerClient   float64
	BurstPerClient int
	// MaxInflightPerClient: such reviews one client may have at once.
	MaxInflightPerClient int
}

// DefaultBudgetConfig is the budget kubox-router has without flags.
func DefaultBudgetConfig() BudgetConfig {
	return BudgetConfig{QPS: DefaultReviewQPS, Burst: DefaultReviewBurst, MaxInflight: DefaultReviewMaxInflight,
		QPSPerClient: DefaultReviewQPSPerClient, BurstPerClient: DefaultReviewBurstPerClient,
		MaxInflightPerClient: DefaultReviewMaxInflightPerClient}
}

// Validate reports settings that cannot work.
func (c BudgetConfig) Validate() error {
	if c.QPS < 0 || c.Burst < 0 || c.MaxInflight < 0 || c.QPSPerClient < 0 || c.BurstPerClient < 0 || c.MaxInflightPerClient < 0 {
		return fmt.Errorf("the TokenReview budget (--tokenreview-*) cannot be negative (0 means unlimited): %+v", c)
	}
	return nil
}

// LimitedError is the answer when the budget has no room: the client should retry after
// RetryAfter. Nothing waits in a queue.
type LimitedError struct {
	Scope      string
	RetryAfter time.Duration
	msg        string
}

func (e *LimitedError) Error() string { return e.msg }

// Budget hands out permission to review an unknown token: a slot of the router's and of the
// client's concurrency, and a token of the router's and of the client's bucket. It never
// blocks: without room it says when to retry.
type Budget struct {
	cfg   BudgetConfig
	clock clock.PassiveClock

	mu       sync.Mutex
	global   *rate.Limiter
	inflight int
	clients  map[string]*clientBudget
	// sweepAt is the number of clients at which idle ones are forgotten.
	sweepAt int
}

type clientBudget struct {
	inflight int
	bucket   *rate.Limiter
}

// minSweep is the number of clients remembered before the first sweep of idle ones.
const minSweep = 1024

// NewBudget returns a budget of cfg, measuring time with clk.
func NewBudget(cfg BudgetConfig, clk clock.PassiveClock) *Budget {
	return &Budget{cfg: cfg, clock: clk, global: newBucket(cfg.QPS, cfg.Burst), clients: map[string]*clientBudget{}, sweepAt: minSweep}
}

func newBucket(qps float64, burst int) *rate.Limiter {
	if qps == 0 {
		return rate.NewLimiter(rate.Inf, 0)
	}
	return rate.NewLimiter(rate.Limit(qps), max(burst, 1))
}

// Acquire takes room for one review for client; release gives back the concurrency slots.
func (b *Budget) Acquire(client string) (release func(), err *LimitedError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	c := b.clients[client]
	if c == nil {
		c = &clientBudget{bucket: newBucket(b.cfg.QPSPerClient, b.cfg.BurstPerClient)}
	}
	if limit := b.cfg.MaxInflightPerClient; limit > 0 && c.inflight >= limit {
		return nil, &LimitedError{Scope: ScopeClient, RetryAfter: time.Second, msg: fmt.Sprintf("client %s has %d tokens "+
			"under review, the router's limit per client (--tokenreview-max-inflight-per-client); retry when they are answered", client, limit)}
	}
	if limit := b.cfg.MaxInflight; limit > 0 && b.inflight >= limit {
		return nil, &LimitedError{Scope: ScopeRouter, RetryAfter: time.Second, msg: fmt.Sprintf("the router has %d unknown "+
			"tokens under review, its limit (--tokenreview-max-inflight); retry shortly", limit)}
	}
	mine := c.bucket.ReserveN(now, 1)
	if d := mine.DelayFrom(now); d > 0 {
		mine.CancelAt(now)
		return nil, &LimitedError{Scope: ScopeClient, RetryAfter: d, msg: fmt.Sprintf("client %s sent more unknown tokens than "+
			"the router reviews per client (--tokenreview-qps-per-client %g, --tokenreview-burst-per-client %d); retry in %s",
			client, b.cfg.QPSPerClient, b.cfg.BurstPerClient, roundUp(d))}
	}
	all := b.global.ReserveN(now, 1)
	if d := all.DelayFrom(now); d > 0 {
		all.CancelAt(now)
		mine.CancelAt(now)
		return nil, &LimitedError{Scope: ScopeRouter, RetryAfter: d, msg: fmt.Sprintf("the router reviews at most %g unknown "+
			"tokens a second (--tokenreview-qps, --tokenreview-burst %d); retry in %s", b.cfg.QPS, b.cfg.Burst, roundUp(d))}
	}
	c.inflight++
	b.inflight++
	b.clients[client] = c
	b.sweep(now)
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			c.inflight--
			b.inflight--
		})
	}, nil
}

// sweep forgets clients with nothing in flight and a full bucket (a new one is the same) once
// there are sweepAt of them, so memory follows the clients active in the last few seconds.
func (b *Budget) sweep(now time.Time) {
	if len(b.clients) < b.sweepAt {
		return
	}
	for k, c := range b.clients {
		if c.inflight == 0 && (c.bucket.Limit() == rate.Inf || c.bucket.TokensAt(now) >= float64(c.bucket.Burst())) {
			delete(b.clients, k)
		}
	}
	b.sweepAt = max(minSweep, 2*len(b.clients))
}

// roundUp is d in whole seconds, at least one: what a Retry-After header can say.
func roundUp(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(max(d, time.Second).Seconds())) * time.Second
}

// RetryAfterSeconds is e.RetryAfter for a Retry-After header: whole seconds, at least 1.
func (e *LimitedError) RetryAfterSeconds() int { return int(roundUp(e.RetryAfter) / time.Second) }
