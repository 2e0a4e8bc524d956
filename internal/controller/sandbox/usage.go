package sandbox

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/usage"
)

// UsageCounter says what a sandbox used so far: usage metering's Tracker
// (internal/controller/usage), or NoUsage when metering is off.
type UsageCounter interface {
	// Figures returns what the sandbox with uid counted up to now; false if it counts none.
	Figures(uid types.UID, now time.Time) (usage.Figures, bool)
}

// NoUsage is the UsageCounter of a controller that does not meter usage: status.usage is left
// as it is.
func NoUsage() UsageCounter { return noUsage{} }

type noUsage struct{}

func (noUsage) Figures(types.UID, time.Time) (usage.Figures, bool) { return usage.Figures{}, false }

// WithUsage makes the reconciler summarise what u counted in status.usage, at most once every
// interval while the sandbox runs (usageSummary).
func (r *Reconciler) WithUsage(u UsageCounter, interval time.Duration) *Reconciler {
	r.usage, r.usageInterval = u, interval
	return r
}

// summarizeUsage sets want.Usage, the status this pass computed, to the summary to write, and
// returns how soon the sandbox must be looked at again for its next summary (0: no need).
func (r *Reconciler) summarizeUsage(sb *sandboxv1beta1.Sandbox, want *sandboxv1beta1.SandboxStatus, now time.Time) time.Duration {
	f, ok := r.usage.Figures(sb.UID, now)
	if !ok {
		return 0
	}
	var after time.Duration
	want.Usage, after = usageSummary(sb.Status.Usage, f, usage.StateOfConditions(want.Conditions), sb.CreationTimestamp.Time, now, r.usageInterval)
	return after
}

// usageSummary decides status.usage from the summary written before (prev, nil for none), the
// figures counted until now and what the status this pass writes says. It writes rarely,
// because each write is an API write per sandbox:
//   - at suspend: once, when the sandbox ran or woke since prev, so a suspended sandbox's status
//     holds everything it ran; its suspended seconds grow unwritten until it runs again;
//   - while it runs: at most once every interval after prev (after since, the sandbox's
//     creation, for the first), returning how long until the next one is due;
//   - never when the whole-number figures are those written already, and never otherwise.
//
// The summary it keeps is prev itself, so a pass that writes the status for another reason
// writes the same summary.
func usageSummary(prev *sandboxv1beta1.UsageStatus, f usage.Figures, phase usage.State, since, now time.Time,
	interval time.Duration) (*sandboxv1beta1.UsageStatus, time.Duration) {
	next := &sandboxv1beta1.UsageStatus{
		LastUpdateTime: metav1.NewTime(now), RunningSeconds: int64(f.RunningSeconds), SuspendedSeconds: int64(f.SuspendedSeconds),
		Wakes: f.Wakes, RequestedCPUCoreSeconds: int64(f.RequestedCPUCoreSeconds), RequestedMemoryGiBSeconds: int64(f.RequestedMemoryGiBSeconds),
	}
	was := prev
	if was == nil {
		was = &sandboxv1beta1.UsageStatus{LastUpdateTime: metav1.NewTime(since)}
	}
	switch phase {
	case usage.StateSuspended:
		if was.RunningSeconds != next.RunningSeconds || was.Wakes != next.Wakes {
			return next, 0
		}
		return prev, 0
	case usage.StatePending:
		return prev, 0
	}
	if due := was.LastUpdateTime.Add(interval); now.Before(due) {
		return prev, due.Sub(now)
	}
	if sameUsage(was, next) {
		return prev, interval
	}
	return next, interval
}

// sameUsage compares the figures of two summaries, not when they were taken.
func sameUsage(a, b *sandboxv1beta1.UsageStatus) bool {
	return a.RunningSeconds == b.RunningSeconds && a.SuspendedSeconds == b.SuspendedSeconds && a.Wakes == b.Wakes &&
		a.RequestedCPUCoreSeconds == b.RequestedCPUCoreSeconds && a.RequestedMemoryGiBSeconds == b.RequestedMemoryGiBSeconds
}
