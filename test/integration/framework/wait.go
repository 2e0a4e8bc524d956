package framework

import (
	"testing"
	"time"
)

// DefaultTimeout is how long Eventually waits. It is generous: it bounds a test that has failed,
// it does not measure one that passes.
const DefaultTimeout = 30 * time.Second

// PollInterval is how often WaitFor and Consistently evaluate their condition.
const PollInterval = 50 * time.Millisecond

// WaitFor evaluates cond every PollInterval until it returns true, and fails the test if it has not
// by timeout. cond's string describes what it saw (for example "Ready=False/DependenciesNotReady");
// the last one is in the failure message. Call it from the test's goroutine.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (done bool, status string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var status string
	for {
		var done bool
		done, status = cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Timed out after %v; last seen: %s", timeout, status)
		}
		time.Sleep(PollInterval)
	}
}

// Eventually is WaitFor with DefaultTimeout.
func Eventually(t testing.TB, cond func() (done bool, status string)) {
	t.Helper()
	WaitFor(t, DefaultTimeout, cond)
}

// Consistently evaluates cond every PollInterval for duration and fails the test the first time it
// returns false, with cond's description. Use it to check that something does not happen (a
// controller leaves an object alone); a short duration makes it weaker, never flaky.
func Consistently(t testing.TB, duration time.Duration, cond func() (ok bool, status string)) {
	t.Helper()
	deadline := time.Now().Add(duration)
	for {
		if ok, status := cond(); !ok {
			t.Fatalf("Condition stopped holding: %s", status)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(PollInterval)
	}
}
