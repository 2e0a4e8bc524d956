package authn

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// step is one thing a budget test does: acquire for a client, release an earlier acquisition,
// or let time pass.
type step struct {
	acquire string        // client
	release int           // 1-based index of an earlier step that acquired
	wait    time.Duration // clock step
}

// outcome is what an acquire gives: "ok", or the scope and Retry-After of a refusal.
func outcome(err *LimitedError) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%s retry %ds", err.Scope, err.RetryAfterSeconds())
}

func TestBudget(t *testing.T) {
	acq := func(c string) step { return step{acquire: c} }
	rel := func(i int) step { return step{release: i} }
	wait := func(d time.Duration) step { return step{wait: d} }
	for name, tc := range map[string]struct {
		cfg   BudgetConfig
		steps []step
		want  []string // one per acquire step
	}{
		"per-client in-flight bound, slot given back": {
			cfg:   BudgetConfig{MaxInflightPerClient: 2},
			steps: []step{acq("a"), acq("a"), acq("a"), acq("b"), rel(1), acq("a")},
			want:  []string{"ok", "ok", "client retry 1s", "ok", "ok"},
		},
		"router in-flight bound is shared": {
			cfg:   BudgetConfig{MaxInflight: 2},
			steps: []step{acq("a"), acq("b"), acq("c"), rel(2), acq("c")},
			want:  []string{"ok", "ok", "router retry 1s", "ok"},
		},
		"per-client rate: burst, then Retry-After, then refill": {
			cfg:   BudgetConfig{QPSPerClient: 0.5, BurstPerClient: 2},
			steps: []step{acq("a"), acq("a"), acq("a"), wait(time.Second), acq("a"), wait(time.Second), acq("a"), acq("a")},
			want:  []string{"ok", "ok", "client retry 2s", "client retry 1s", "ok", "client retry 2s"},
		},
		"fairness: one client's empty bucket does not hold up another": {
			cfg:   BudgetConfig{QPSPerClient: 1, BurstPerClient: 1, QPS: 100, Burst: 100},
			steps: []step{acq("flood"), acq("flood"), acq("flood"), acq("real")},
			want:  []string{"ok", "client retry 1s", "client retry 1s", "ok"},
		},
		"router rate: refusal does not spend the client's token": {
			cfg:   BudgetConfig{QPS: 1, Burst: 2, QPSPerClient: 0.1, BurstPerClient: 1},
			steps: []step{acq("a"), acq("b"), acq("c"), wait(time.Second), acq("c")},
			want:  []string{"ok", "ok", "router retry 1s", "ok"},
		},
		"per-client in-flight checked before rates are spent": {
			cfg:   BudgetConfig{MaxInflightPerClient: 1, QPSPerClient: 0.1, BurstPerClient: 2},
			steps: []step{acq("a"), acq("a"), rel(1), acq("a")},
			want:  []string{"ok", "client retry 1s", "ok"},
		},
		"zero is unlimited": {
			steps: []step{acq("a"), acq("a"), acq("a"), acq("a")},
			want:  []string{"ok", "ok", "ok", "ok"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
			b := NewBudget(tc.cfg, clk)
			releases := map[int]func(){}
			var got []string
			for i, s := range tc.steps {
				switch {
				case s.acquire != "":
					release, err := b.Acquire(s.acquire)
					got = append(got, outcome(err))
					if err == nil {
						releases[i+1] = release
					}
				case s.release > 0:
					releases[s.release]()
				default:
					clk.SetTime(clk.Now().Add(s.wait))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBudgetReleaseTwiceGivesBackOneSlot(t *testing.T) {
	b := NewBudget(BudgetConfig{MaxInflight: 1}, clocktesting.NewFakePassiveClock(time.Unix(1e9, 0)))
	release, _ := b.Acquire("a")
	release()
	release()
	if _, err := b.Acquire("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire("b"); err == nil {
		t.Error("a second release gave back a slot it did not hold")
	}
}

func TestBudgetForgetsIdleClients(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	b := NewBudget(BudgetConfig{QPSPerClient: 1, BurstPerClient: 1}, clk)
	for i := range 10 * minSweep {
		release, err := b.Acquire(fmt.Sprint("client-", i))
		if err != nil {
			t.Fatal(err)
		}
		release()
		clk.SetTime(clk.Now().Add(time.Millisecond))
	}
	if n := len(b.clients); n > 2*minSweep {
		t.Errorf("the budget remembers %d clients; want at most %d (those idle and refilled are forgotten)", n, 2*minSweep)
	}
}
