package manager

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
)

// SetMemoryLimit gives the Go runtime a soft memory limit of cfg.memoryLimitRatio of the
// container's memory limit (cgroup v1 or v2). Without one the garbage collector lets the heap
// grow to twice what is live before it collects, so the controller's resident memory is about
// twice its live heap (docs/benchmarks.md, "Controller memory"); with one it collects more often
// as it nears the limit and returns the freed pages, which keeps it away from the OOM killer when
// the limit is close to what it needs. A GOMEMLIMIT environment variable takes precedence, and a
// process outside any memory-limited cgroup keeps no limit. It returns the limit in force.
func SetMemoryLimit(cfg *configv1alpha1.ControllerConfiguration, log logr.Logger) int64 {
	return setMemoryLimit(ptr.Deref(cfg.MemoryLimitRatio, configv1alpha1.DefaultMemoryLimitRatio), memlimit.FromCgroup, log)
}

// setMemoryLimit is SetMemoryLimit with the source of the container's limit as a parameter.
func setMemoryLimit(ratio float32, limit memlimit.Provider, log logr.Logger) int64 {
	if ratio == 0 {
		return currentMemoryLimit()
	}
	set, err := memlimit.Set(memlimit.WithRatio(float64From32(ratio)), memlimit.WithProvider(limit),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log))))
	if err != nil {
		// Outside a container (no cgroup memory controller): run as Go does by default.
		log.V(1).Info("Not setting a Go memory limit", "reason", err.Error())
	}
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
		log.Info("Go memory limit from GOMEMLIMIT", "bytes", set)
	case set != math.MaxInt64:
		log.Info("Go memory limit", "bytes", set, "memoryLimitRatio", ratio)
	}
	return set
}

// currentMemoryLimit returns the runtime's memory limit without changing it.
func currentMemoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// float64From32 widens f to the float64 nearest to its decimal spelling, so a ratio of 0.9 gives
// 90% of the limit and not 89.99999762%.
func float64From32(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}
