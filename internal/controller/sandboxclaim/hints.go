package sandboxclaim

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/cachelag"
)

// This file holds what the controller remembers between passes, in memory. None of it is needed
// for correctness, which rests on the API server (a bind is an optimistically locked patch; a
// claim finds its sandbox by owner reference): it saves conflicts and API calls while the
// informer cache lags behind the controller's own writes, and a restarted controller, whose cache
// starts from a fresh list, does without it.

// How long the hints hold.
const (
	// reservationTTL bounds how long a member stays skipped after this process bound it, or
	// failed to, while the cache has not caught up.
	reservationTTL = 10 * time.Second
	// expectationTTL is how long a claim trusts that the sandbox it just bound or created will
	// show up in the cache, before it asks the API server.
	expectationTTL = 10 * time.Second
	// sweepAbove is the number of entries above which expired ones are dropped.
	sweepAbove = 1024
)

// reservationState says why a member is reserved.
type reservationState int

const (
	// reservedInFlight: a worker of this process is binding it.
	reservedInFlight reservationState = iota
	// reservedBound: this process bound it; the cache still shows it in its pool.
	reservedBound
	// reservedConflicted: a bind at the cached resourceVersion failed (someone else bound or
	// changed it); it is skipped until the cache shows a newer version.
	reservedConflicted
)

type reservation struct {
	state reservationState
	// resourceVersion is the version the bind was tried at: the member is skipped while the
	// cache still has that version.
	resourceVersion string
	// until is when the reservation lapses, for the states other than in flight.
	until time.Time
}

// reservations keep this process's workers from binding the same warm member at once. The
// exclusion that matters is the API server's: two processes may pick the same member, and one of
// their binds then fails with a conflict.
type reservations struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	entries map[types.UID]reservation
}

func newReservations(clk clock.PassiveClock) *reservations {
	return &reservations{clock: clk, entries: map[types.UID]reservation{}}
}

// take picks a member of cands for a claim, starting at seed, and marks it in flight. It returns
// nil when every member is reserved; wait is then true when one of them may still become free
// (a bind in flight or a conflict not yet seen in the cache), and false when they were all
// bound by this process.
func (rs *reservations) take(cands []*sandboxv1beta1.Sandbox, seed uint32) (picked *sandboxv1beta1.Sandbox, wait bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	now := rs.clock.Now()
	i := pickCandidate(len(cands), seed, func(i int) bool {
		res, ok := rs.entries[cands[i].UID]
		switch {
		case !ok:
			return true
		case res.state == reservedInFlight:
			wait = true
			return false
		case res.resourceVersion != cands[i].ResourceVersion || !now.Before(res.until):
			return true
		case res.state == reservedConflicted:
			wait = true
		}
		return false
	})
	if i < 0 {
		return nil, wait
	}
	rs.entries[cands[i].UID] = reservation{state: reservedInFlight}
	return cands[i], false
}

// settle records the outcome of binding sb, tried at its resourceVersion: state bound or
// conflicted keeps it reserved until the cache moves past that version; any other state drops
// the reservation.
func (rs *reservations) settle(sb *sandboxv1beta1.Sandbox, state reservationState) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	now := rs.clock.Now()
	if state == reservedInFlight {
		delete(rs.entries, sb.UID)
	} else {
		rs.entries[sb.UID] = reservation{state: state, resourceVersion: sb.ResourceVersion, until: now.Add(reservationTTL)}
	}
	if len(rs.entries) > sweepAbove {
		for uid, res := range rs.entries {
			if res.state != reservedInFlight && !now.Before(res.until) {
				delete(rs.entries, uid)
			}
		}
	}
}

// pickCandidate returns the first index i, going round from seed modulo n, for which available(i)
// is true, or -1. Starting claims at different places spreads the binds of controller replicas
// that do not share reservations over the pool, so they rarely try the same member.
func pickCandidate(n int, seed uint32, available func(i int) bool) int {
	if n == 0 {
		return -1
	}
	start := int(seed % uint32(n))
	for k := range n {
		if i := (start + k) % n; available(i) {
			return i
		}
	}
	return -1
}

// expectation is the sandbox a claim bound or created, which the cache may not show yet.
type expectation struct {
	name string
	at   time.Time
}

// claimMemory remembers, per claim, the sandbox it just bound or created and the resourceVersion
// its last status write replaced.
type claimMemory struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	// sandboxes maps a claim to the sandbox it bound or created, until the cache shows it.
	sandboxes map[types.UID]expectation
	// status holds the versions the claims' last status writes replaced: while the cache still
	// shows that version, the cache is behind the write.
	status *cachelag.Writes
}

func newClaimMemory(clk clock.PassiveClock) *claimMemory {
	return &claimMemory{clock: clk, sandboxes: map[types.UID]expectation{}, status: cachelag.New()}
}

// expect records that claim now controls the sandbox called name.
func (m *claimMemory) expect(claim types.UID, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sandboxes[claim] = expectation{name: name, at: m.clock.Now()}
}

// expected returns the sandbox claim bound or created, if any, and whether that was recent
// enough to wait for the cache rather than ask the API server.
func (m *claimMemory) expected(claim types.UID) (name string, recent bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sandboxes[claim]
	if !ok {
		return "", false
	}
	return e.name, m.clock.Since(e.at) < expectationTTL
}

// observed drops the expectation of claim: the cache shows its sandbox, or it is known gone.
func (m *claimMemory) observed(claim types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sandboxes, claim)
}

// statusWritten records that a status write replaced version base of claim.
func (m *claimMemory) statusWritten(claim types.UID, base string) { m.status.Wrote(claim, base) }

// cacheBehind reports whether the cached claim, at resourceVersion rv, predates this process's
// last status write; a newer version's event is then on its way.
func (m *claimMemory) cacheBehind(claim types.UID, rv string) bool { return m.status.Behind(claim, rv) }

// forget drops everything about a deleted claim.
func (m *claimMemory) forget(claim types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sandboxes, claim)
	m.status.Forget(claim)
}
