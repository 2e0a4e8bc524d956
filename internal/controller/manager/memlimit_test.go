package manager

import (
	"errors"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

func TestSetMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	noCgroup := func() (uint64, error) { return 0, errors.New("no cgroup memory controller") }
	cases := map[string]struct {
		ratio      float32
		limit      memlimit.Provider
		gomemlimit string
		want       int64
	}{
		"a share of the container's limit": {ratio: 0.5, limit: memlimit.Limit(512 * mib), want: 256 * mib},
		"the default ratio":                {ratio: 0.9, limit: memlimit.Limit(1000 * mib), want: 900 * mib},
		"ratio 0 keeps no limit":           {ratio: 0, limit: memlimit.Limit(512 * mib), want: math.MaxInt64},
		"no limit on the container":        {ratio: 0.9, limit: func() (uint64, error) { return 0, memlimit.ErrNoLimit }, want: math.MaxInt64},
		"outside a container":              {ratio: 0.9, limit: noCgroup, want: math.MaxInt64},
		// The runtime read GOMEMLIMIT at start; here it is only seen to be set, and kept.
		"GOMEMLIMIT wins": {ratio: 0.5, limit: memlimit.Limit(512 * mib), gomemlimit: "300MiB", want: math.MaxInt64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			t.Setenv("AUTOMEMLIMIT", "") // restored after the test; unset during it
			if err := os.Unsetenv("AUTOMEMLIMIT"); err != nil {
				t.Fatal(err)
			}
			prev := debug.SetMemoryLimit(math.MaxInt64)
			t.Cleanup(func() { debug.SetMemoryLimit(prev) })
			if got := setMemoryLimit(tc.ratio, tc.limit, logr.Discard()); got != tc.want {
				t.Errorf("setMemoryLimit returned %d, want %d", got, tc.want)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("runtime memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
