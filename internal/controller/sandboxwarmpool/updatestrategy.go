package sandboxwarmpool

import (
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// staleDeletions returns the stale members spec.updateStrategy deletes in this pass:
//   - OnReplenish: none; stale members stay until claimed, and only their replacements are built
//     from the current template.
//   - Recreate: all of them, at once; replicas.go refills the pool in the same pass.
//   - RollingUpdate: the stale members that are not Ready, and as many Ready ones as keep the
//     Ready members at replicas - maxUnavailable or more. replicas.go then creates replacements
//     while the pool stays within replicas + maxSurge members.
func staleDeletions(in planInput, ms []*member) []*member {
	stale := filter(ms, func(m *member) bool { return m.stale })
	switch in.strategy {
	case extv1beta1.WarmPoolUpdateStrategyRecreate:
		return stale
	case extv1beta1.WarmPoolUpdateStrategyRollingUpdate:
		notReady := filter(stale, func(m *member) bool { return !m.ready })
		ready := filter(stale, func(m *member) bool { return m.ready })
		budget := len(filter(ms, func(m *member) bool { return m.ready })) - (in.replicas - in.maxUnavailable)
		budget = max(0, min(budget, len(ready)))
		sortForDeletion(ready)
		return append(notReady, ready[:budget]...)
	default:
		return nil
	}
}

// rollingCreations is how many members a RollingUpdate creates, given the members left after
// this pass's deletions: enough to bring the members built from the current template to
// replicas, without the pool exceeding replicas + maxSurge members.
func rollingCreations(in planInput, ms []*member) int {
	fresh := len(filter(ms, func(m *member) bool { return !m.stale }))
	return max(0, min(in.replicas+in.maxSurge-len(ms), in.replicas-fresh))
}
