package sandboxwarmpool

import (
	"cmp"
	"slices"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// sizeToReplicas implements spec.replicas on the members left after the readiness and update
// strategy deletions: it returns the members beyond replicas, to delete, and how many members to
// create. During a RollingUpdate only members built from the current template count as excess
// (the stale ones are the update strategy's), and creations stay within maxSurge.
func sizeToReplicas(in planInput, ms []*member) (extra []*member, create int) {
	if in.strategy == extv1beta1.WarmPoolUpdateStrategyRollingUpdate {
		extra = excess(filter(ms, func(m *member) bool { return !m.stale }), in.replicas)
		return extra, rollingCreations(in, without(ms, extra))
	}
	extra = excess(ms, in.replicas)
	return extra, max(0, in.replicas-len(ms))
}

// excess returns the members to delete to bring ms down to n: those not Ready first, then stale
// ones, then the newest. A Ready member that has waited longest is the last to go.
func excess(ms []*member, n int) []*member {
	if len(ms) <= n {
		return nil
	}
	sorted := slices.Clone(ms)
	sortForDeletion(sorted)
	return sorted[:len(ms)-n]
}

// sortForDeletion orders members from the first to delete to the last: not Ready before Ready,
// stale before fresh, newer before older, then by name so the order is stable.
func sortForDeletion(ms []*member) {
	slices.SortFunc(ms, func(a, b *member) int {
		if a.ready != b.ready {
			return boolFirst(!a.ready, !b.ready)
		}
		if a.stale != b.stale {
			return boolFirst(a.stale, b.stale)
		}
		if c := b.sandbox.CreationTimestamp.Compare(a.sandbox.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.sandbox.Name, b.sandbox.Name)
	})
}

// boolFirst orders the side that is true first.
func boolFirst(a, b bool) int {
	switch {
	case a && !b:
		return -1
	case b && !a:
		return 1
	}
	return 0
}
