package inflight

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestStoreUpdate(t *testing.T) {
	clk := clocktesting.NewFakeClock(start)
	s := NewStore[string, int](clk, time.Minute)
	s.Update("k", func(v *int, age time.Duration, found bool) Action {
		if found || age != 0 {
			t.Errorf("new entry: found %t, age %v; want false, 0", found, age)
		}
		*v = 1
		return Keep
	})
	clk.Step(time.Second)
	s.Update("k", func(v *int, _ time.Duration, _ bool) Action { *v++; return Keep })
	if v, age, ok := s.Get("k"); !ok || v != 2 || age != time.Second {
		t.Errorf("after Keep: Get() = %d, %v, %t; want 2, 1s, true (Keep leaves the stamp)", v, age, ok)
	}
	s.Update("k", func(*int, time.Duration, bool) Action { return Touch })
	if _, age, _ := s.Get("k"); age != 0 {
		t.Errorf("after Touch: age = %v; want 0", age)
	}
	s.Update("k", func(*int, time.Duration, bool) Action { return Drop })
	if _, _, ok := s.Get("k"); ok {
		t.Error("after Drop: Get() found the entry")
	}
	s.Update("new", func(*int, time.Duration, bool) Action { return Drop })
	if s.Len() != 0 {
		t.Errorf("Drop of a new entry stored it: Len() = %d", s.Len())
	}
	s.Set("k", 3)
	s.Forget("k")
	if _, _, ok := s.Get("k"); ok {
		t.Error("after Forget: Get() found the entry")
	}
}

func TestStoreSweepsExpiredAboveBound(t *testing.T) {
	cases := map[string]struct {
		expiry time.Duration
		want   int
	}{
		"expired entries go once the store is past the bound": {expiry: time.Minute, want: 1},
		"entries without expiry are kept":                     {expiry: 0, want: SweepAbove + 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			s := NewStore[string, int](clk, tc.expiry)
			for i := range SweepAbove {
				s.Set(fmt.Sprint(i), i)
			}
			clk.Step(time.Hour)
			s.Set("fresh", 0)
			if got := s.Len(); got != tc.want {
				t.Errorf("Len() = %d; want %d", got, tc.want)
			}
		})
	}
}
