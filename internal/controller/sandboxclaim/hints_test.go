package sandboxclaim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestPickCandidate(t *testing.T) {
	cases := map[string]struct {
		n         int
		seed      uint32
		available []int // indexes that are available
		want      int
	}{
		"no candidates":                          {n: 0, seed: 7, want: -1},
		"the seed picks the start":               {n: 4, seed: 6, available: []int{0, 1, 2, 3}, want: 2},
		"unavailable ones are skipped, in order": {n: 4, seed: 2, available: []int{0, 1}, want: 0},
		"the search wraps around":                {n: 4, seed: 3, available: []int{1}, want: 1},
		"none available":                         {n: 3, seed: 1, want: -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			avail := map[int]bool{}
			for _, i := range tc.available {
				avail[i] = true
			}
			if got := pickCandidate(tc.n, tc.seed, func(i int) bool { return avail[i] }); got != tc.want {
				t.Errorf("pickCandidate() = %d; want %d", got, tc.want)
			}
		})
	}
}

func member(name, rv string) *sandboxv1beta1.Sandbox {
	sb := testutil.MakeSandbox(name, testNS).Obj()
	sb.UID = types.UID(name + "-uid")
	sb.ResourceVersion = rv
	return sb
}

func TestReservations(t *testing.T) {
	a, b := member("a", "1"), member("b", "1")
	names := func(sbs ...*sandboxv1beta1.Sandbox) []string {
		var out []string
		for _, sb := range sbs {
			if sb == nil {
				out = append(out, "<none>")
			} else {
				out = append(out, sb.Name)
			}
		}
		return out
	}

	t.Run("two workers never take the same member", func(t *testing.T) {
		rs := newReservations(clocktesting.NewFakeClock(testNow.Time))
		first, _ := rs.take([]*sandboxv1beta1.Sandbox{a, b}, 0)
		second, _ := rs.take([]*sandboxv1beta1.Sandbox{a, b}, 0)
		third, wait := rs.take([]*sandboxv1beta1.Sandbox{a, b}, 0)
		if diff := cmp.Diff([]string{"a", "b", "<none>"}, names(first, second, third)); diff != "" {
			t.Errorf("taken mismatch (-want +got):\n%s", diff)
		}
		if !wait {
			t.Error("take() with every member in flight: wait = false; want true (a failed bind frees one)")
		}
	})

	t.Run("a member bound here is skipped until the cache moves on, without waiting", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow.Time)
		rs := newReservations(clk)
		got, _ := rs.take([]*sandboxv1beta1.Sandbox{a}, 0)
		rs.settle(got, reservedBound)
		if again, wait := rs.take([]*sandboxv1beta1.Sandbox{a}, 0); again != nil || wait {
			t.Errorf("take() of a member bound here = %v, wait %t; want none and no wait (go cold)", names(again), wait)
		}
		if again, _ := rs.take([]*sandboxv1beta1.Sandbox{member("a", "2")}, 0); again == nil {
			t.Error("take() of the member at a newer resourceVersion = none; want it (the cache caught up)")
		}
	})

	t.Run("a conflicted member makes claims wait, and lapses", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testNow.Time)
		rs := newReservations(clk)
		got, _ := rs.take([]*sandboxv1beta1.Sandbox{a}, 0)
		rs.settle(got, reservedConflicted)
		if again, wait := rs.take([]*sandboxv1beta1.Sandbox{a}, 0); again != nil || !wait {
			t.Errorf("take() of a conflicted member = %v, wait %t; want none and wait", names(again), wait)
		}
		clk.Step(reservationTTL)
		if again, _ := rs.take([]*sandboxv1beta1.Sandbox{a}, 0); again == nil {
			t.Error("take() after the reservation lapsed = none; want the member")
		}
	})

	t.Run("a bind that failed otherwise frees the member at once", func(t *testing.T) {
		rs := newReservations(clocktesting.NewFakeClock(testNow.Time))
		got, _ := rs.take([]*sandboxv1beta1.Sandbox{a}, 0)
		rs.settle(got, reservedInFlight)
		if again, _ := rs.take([]*sandboxv1beta1.Sandbox{a}, 0); again == nil {
			t.Error("take() after a released reservation = none; want the member")
		}
	})
}

func TestClaimMemory(t *testing.T) {
	clk := clocktesting.NewFakeClock(testNow.Time)
	m := newClaimMemory(clk)
	uid := types.UID("c1")

	if name, _ := m.expected(uid); name != "" {
		t.Errorf("expected() of a new claim = %q; want none", name)
	}
	m.expect(uid, "pool-abcde")
	if name, recent := m.expected(uid); name != "pool-abcde" || !recent {
		t.Errorf("expected() just after expect = %q, recent %t; want pool-abcde, true", name, recent)
	}
	clk.Step(expectationTTL + time.Millisecond)
	if name, recent := m.expected(uid); name != "pool-abcde" || recent {
		t.Errorf("expected() after the TTL = %q, recent %t; want pool-abcde, false (ask the API server)", name, recent)
	}
	m.observed(uid)
	if name, _ := m.expected(uid); name != "" {
		t.Errorf("expected() after observed = %q; want none", name)
	}

	m.statusWritten(uid, "10")
	if !m.cacheBehind(uid, "10") {
		t.Error("cacheBehind() at the version the write replaced = false; want true")
	}
	if m.cacheBehind(uid, "11") {
		t.Error("cacheBehind() at a newer version = true; want false")
	}
	if m.cacheBehind(uid, "10") {
		t.Error("cacheBehind() once the cache moved on = true; want false (the hint is spent)")
	}
}
