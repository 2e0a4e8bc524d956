package sandboxwarmpool

import (
	"time"
)

// triageUnready sorts the members that are not Ready (controllers.sandboxWarmPool's
// readinessGracePeriod): a member whose Pod terminated is replaced at once; one not Ready for
// longer than grace is replaced, unless its Pod cannot be scheduled. A replacement would not be
// schedulable either, so such members are held instead, and reported, until the cluster can
// place them. graceEndsIn is how long until the grace period of the next member still within it
// ends, so the pool is looked at again then.
func triageUnready(ms []*member, now time.Time, grace time.Duration) (replace, held []*member, graceEndsIn time.Duration) {
	for _, m := range ms {
		switch {
		case m.ready:
		case m.finished:
			replace = append(replace, m)
		case m.unschedulable:
			held = append(held, m)
		default:
			left := m.notReadySince.Add(grace).Sub(now)
			if left <= 0 {
				replace = append(replace, m)
			} else if graceEndsIn == 0 || left < graceEndsIn {
				graceEndsIn = left
			}
		}
	}
	return replace, held, graceEndsIn
}
