package inflight

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestPick(t *testing.T) {
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
			if got := pick(tc.n, tc.seed, func(i int) bool { return avail[i] }); got != tc.want {
				t.Errorf("pick() = %d; want %d", got, tc.want)
			}
		})
	}
}

func object(name, rv string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: name, UID: types.UID(name + "-uid"), ResourceVersion: rv}
}

const ttl = 10 * time.Second

func TestReservations(t *testing.T) {
	a, b := object("a", "1"), object("b", "1")
	take := func(rs *Reservations[*metav1.ObjectMeta], cands ...*metav1.ObjectMeta) (string, bool) {
		got, ok, wait := rs.Take(cands, 0)
		if !ok {
			return "<none>", wait
		}
		return got.Name, wait
	}

	t.Run("two workers never take the same object", func(t *testing.T) {
		rs := NewReservations[*metav1.ObjectMeta](clocktesting.NewFakeClock(start), ttl)
		first, _ := take(rs, a, b)
		second, _ := take(rs, a, b)
		third, wait := take(rs, a, b)
		if diff := cmp.Diff([]string{"a", "b", "<none>"}, []string{first, second, third}); diff != "" {
			t.Errorf("taken mismatch (-want +got):\n%s", diff)
		}
		if !wait {
			t.Error("Take() with every object in flight: wait = false; want true (a failed attempt frees one)")
		}
	})

	t.Run("an object done here is skipped until the cache moves on, without waiting", func(t *testing.T) {
		rs := NewReservations[*metav1.ObjectMeta](clocktesting.NewFakeClock(start), ttl)
		take(rs, a)
		rs.Settle(a, Done)
		if got, wait := take(rs, a); got != "<none>" || wait {
			t.Errorf("Take() of an object done here = %s, wait %t; want none and no wait", got, wait)
		}
		if got, _ := take(rs, object("a", "2")); got != "a" {
			t.Errorf("Take() of the object at a newer resourceVersion = %s; want a (the cache caught up)", got)
		}
	})

	t.Run("a lost object makes workers wait, and lapses", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(start)
		rs := NewReservations[*metav1.ObjectMeta](clk, ttl)
		take(rs, a)
		rs.Settle(a, Lost)
		if got, wait := take(rs, a); got != "<none>" || !wait {
			t.Errorf("Take() of a lost object = %s, wait %t; want none and wait", got, wait)
		}
		clk.Step(ttl)
		if got, _ := take(rs, a); got != "a" {
			t.Errorf("Take() after the reservation lapsed = %s; want a", got)
		}
	})

	t.Run("a failed attempt frees the object at once", func(t *testing.T) {
		rs := NewReservations[*metav1.ObjectMeta](clocktesting.NewFakeClock(start), ttl)
		take(rs, a)
		rs.Settle(a, Failed)
		if got, _ := take(rs, a); got != "a" {
			t.Errorf("Take() after a failed attempt = %s; want a", got)
		}
	})
}
