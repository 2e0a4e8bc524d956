package sandboxwarmpool

import (
	"time"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// planInput is what planning a pass needs, all of it observed or configured.
type planInput struct {
	replicas int
	strategy extv1beta1.WarmPoolUpdateStrategyType
	// maxSurge and maxUnavailable are the RollingUpdate bounds resolved against replicas.
	maxSurge, maxUnavailable int
	// maxBatch caps the creates of one pass.
	maxBatch int
	// templateFound: without a template the pool can build nothing and tell nothing stale.
	templateFound bool
	members       []member
	now           time.Time
	grace         time.Duration
}

// deleteReason says why a member is deleted.
type deleteReason int

const (
	// deleteExcess: the pool has more members than it needs.
	deleteExcess deleteReason = iota
	// deleteNotReady: the member stayed not Ready past the grace period, or its Pod terminated.
	deleteNotReady
	// deleteStale: the member is built from an older template and the update strategy replaces it.
	deleteStale
	// deleteTampered: someone changed the member's spec since the pool created it, or it never
	// had the spec its template-hash label claims; whatever the update strategy, it goes.
	deleteTampered
)

// deletion is a member to delete and why.
type deletion struct {
	member *member
	reason deleteReason
}

// plan is what a pass does: delete members first, then create members. Deleting first keeps a
// RollingUpdate within maxSurge.
type plan struct {
	deletions []deletion
	create    int
	// held are the members not Ready past the grace period that are kept because their Pod
	// cannot be scheduled.
	held []*member
	// graceEndsIn is how long until the next not-Ready member's grace period ends; 0 when none.
	graceEndsIn time.Duration
}

func (p *plan) delete(ms []*member, reason deleteReason) {
	for _, m := range ms {
		p.deletions = append(p.deletions, deletion{member: m, reason: reason})
	}
}

// makePlan decides which members to delete and how many to create. It is a pure function of its
// input: members not Ready past the grace period are replaced (readinessgraceperiod.go), stale
// members are handled by the update strategy (updatestrategy.go), and the rest is sized to
// spec.replicas (replicas.go).
func makePlan(in planInput) plan {
	var p plan
	active := make([]*member, len(in.members))
	for i := range in.members {
		active[i] = &in.members[i]
	}
	if !in.templateFound {
		// Nothing can be built, and nothing told stale: only shed what is more than asked for.
		p.delete(excess(active, in.replicas), deleteExcess)
		return p
	}

	tampered := filter(active, func(m *member) bool { return m.tampered })
	p.delete(tampered, deleteTampered)
	active = without(active, tampered)

	var replace []*member
	replace, p.held, p.graceEndsIn = triageUnready(active, in.now, in.grace)
	p.delete(replace, deleteNotReady)
	active = without(active, replace)

	stale := staleDeletions(in, active)
	p.delete(stale, deleteStale)
	active = without(active, stale)

	extra, create := sizeToReplicas(in, active)
	p.delete(extra, deleteExcess)
	p.create = min(create, in.maxBatch)
	return p
}

// without returns ms minus the members in drop.
func without(ms, drop []*member) []*member {
	if len(drop) == 0 {
		return ms
	}
	dropped := make(map[*member]bool, len(drop))
	for _, m := range drop {
		dropped[m] = true
	}
	out := make([]*member, 0, len(ms))
	for _, m := range ms {
		if !dropped[m] {
			out = append(out, m)
		}
	}
	return out
}

// filter returns the members keep accepts.
func filter(ms []*member, keep func(*member) bool) []*member {
	var out []*member
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}
