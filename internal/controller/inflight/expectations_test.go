package inflight

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

const key = "team-a/pool"

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// step is one call a test makes, in order.
type step func(e *Expectations, clk *clocktesting.FakeClock)

func expectCreations(n int) step {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.ExpectCreations(key, n) }
}
func created(uid types.UID) step {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.CreationSucceeded(key, uid) }
}
func createFailed() step {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.CreationFailed(key) }
}
func observed(uid types.UID) step {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.CreationObserved(key, uid) }
}
func expectDeletion(uid types.UID) step {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.ExpectDeletion(key, uid) }
}
func deletionObserved(uid types.UID) step {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.DeletionObserved(key, uid) }
}
func elapse(d time.Duration) step {
	return func(_ *Expectations, clk *clocktesting.FakeClock) { clk.Step(d) }
}
func forget() step {
	return func(e *Expectations, _ *clocktesting.FakeClock) { e.Forget(key) }
}

func TestSatisfied(t *testing.T) {
	const timeout = time.Minute
	cases := map[string]struct {
		steps         []step
		wantSatisfied bool
		wantExpiresIn time.Duration
	}{
		"nothing expected": {
			wantSatisfied: true,
		},
		"creations in flight": {
			steps:         []step{expectCreations(2)},
			wantExpiresIn: timeout,
		},
		"created, not observed": {
			steps:         []step{expectCreations(2), created("a"), created("b"), observed("a")},
			wantExpiresIn: timeout,
		},
		"created and observed": {
			steps:         []step{expectCreations(2), created("a"), created("b"), observed("b"), observed("a")},
			wantSatisfied: true,
		},
		"observed before the create call returned": {
			steps:         []step{expectCreations(2), observed("a"), created("a"), created("b"), observed("b")},
			wantSatisfied: true,
		},
		"observed before the create call returned, another creation answered first": {
			steps:         []step{expectCreations(2), observed("a"), created("b"), created("a"), observed("b")},
			wantSatisfied: true,
		},
		"observed early, answered last": {
			steps:         []step{expectCreations(2), created("b"), observed("a"), observed("b"), created("a")},
			wantSatisfied: true,
		},
		"one created and observed, one failed": {
			steps:         []step{expectCreations(2), created("a"), createFailed(), observed("a")},
			wantSatisfied: true,
		},
		"every creation failed": {
			steps:         []step{expectCreations(3), createFailed(), createFailed(), createFailed()},
			wantSatisfied: true,
		},
		// An event about a child this controller did not create in this pass (someone else's, or
		// a restart's initial list) satisfies nothing.
		"an event about another child": {
			steps:         []step{expectCreations(1), created("a"), observed("other")},
			wantExpiresIn: timeout,
		},
		"an event about another child while creating": {
			steps:         []step{expectCreations(1), observed("other"), created("a")},
			wantExpiresIn: timeout,
		},
		// Events seen while creations were in flight are forgotten once every creation is
		// answered: a later creation is never matched against them.
		"early events are forgotten after the creations": {
			steps:         []step{expectCreations(1), observed("x"), created("a"), observed("a"), expectCreations(1), created("x")},
			wantExpiresIn: timeout,
		},
		"observations without expectations": {
			steps:         []step{observed("a"), deletionObserved("b")},
			wantSatisfied: true,
		},
		"deletion pending": {
			steps:         []step{expectDeletion("a"), expectDeletion("b"), deletionObserved("a")},
			wantExpiresIn: timeout,
		},
		"deletions observed": {
			steps:         []step{expectDeletion("a"), expectDeletion("b"), deletionObserved("b"), deletionObserved("a")},
			wantSatisfied: true,
		},
		"deletion observed twice": {
			steps:         []step{expectDeletion("a"), deletionObserved("a"), deletionObserved("a")},
			wantSatisfied: true,
		},
		"creations observed, deletion pending": {
			steps:         []step{expectCreations(1), created("a"), expectDeletion("b"), observed("a")},
			wantExpiresIn: timeout,
		},
		"time passes": {
			steps:         []step{expectCreations(1), created("a"), elapse(40 * time.Second)},
			wantExpiresIn: 20 * time.Second,
		},
		"expired": {
			steps:         []step{expectCreations(1), created("a"), elapse(timeout)},
			wantSatisfied: true,
		},
		"a new expectation restarts the timeout": {
			steps:         []step{expectCreations(1), created("a"), elapse(40 * time.Second), expectDeletion("b"), elapse(40 * time.Second)},
			wantExpiresIn: 20 * time.Second,
		},
		"forgotten": {
			steps:         []step{expectCreations(2), created("a"), expectDeletion("b"), forget()},
			wantSatisfied: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			e := NewExpectations(clk, timeout)
			for _, s := range tc.steps {
				s(e, clk)
			}
			ok, expiresIn := e.Satisfied(key)
			if diff := cmp.Diff([]any{tc.wantSatisfied, tc.wantExpiresIn}, []any{ok, expiresIn}); diff != "" {
				t.Errorf("Satisfied() (ok, expiresIn) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExpiredStaysSatisfied checks that once expectations expired, late observations of them do
// not bring anything back.
func TestExpiredStaysSatisfied(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	e := NewExpectations(clk, time.Minute)
	e.ExpectCreations(key, 1)
	e.CreationSucceeded(key, "a")
	clk.Step(time.Minute)
	if ok, _ := e.Satisfied(key); !ok {
		t.Fatalf("Satisfied() = false after the timeout; want true")
	}
	e.CreationObserved(key, "a")
	if ok, _ := e.Satisfied(key); !ok {
		t.Errorf("Satisfied() = false after a late observation; want true")
	}
	if n := e.store.Len(); n != 0 {
		t.Errorf("%d records kept; want none", n)
	}
}

// TestKeysAreIndependent checks that one object's expectations do not hold another's.
func TestKeysAreIndependent(t *testing.T) {
	e := NewExpectations(clocktesting.NewFakeClock(start), time.Minute)
	e.ExpectCreations("team-a/one", 1)
	e.CreationSucceeded("team-a/one", "a")
	e.CreationObserved("team-a/two", "a")
	if ok, _ := e.Satisfied("team-a/one"); ok {
		t.Errorf("Satisfied(one) = true after an observation for two; want false")
	}
	if ok, _ := e.Satisfied("team-a/two"); !ok {
		t.Errorf("Satisfied(two) = false; want true")
	}
}

// TestConcurrentObservations creates and observes from several goroutines, as a reconciler's
// slow-start batch and an informer do, and checks that the books balance (run with -race).
func TestConcurrentObservations(t *testing.T) {
	e := NewExpectations(clocktesting.NewFakeClock(start), time.Minute)
	const n = 64
	e.ExpectCreations(key, n)
	var wg sync.WaitGroup
	for i := range n {
		uid := types.UID(string(rune('A' + i)))
		wg.Go(func() { e.CreationSucceeded(key, uid) })
		wg.Go(func() { e.CreationObserved(key, uid) })
	}
	wg.Wait()
	if ok, _ := e.Satisfied(key); !ok {
		t.Errorf("Satisfied() = false after every creation was observed; want true")
	}
}
