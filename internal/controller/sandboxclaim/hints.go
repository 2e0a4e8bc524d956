package sandboxclaim

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
)

// This file holds what the controller remembers between passes, in memory (package inflight).
// None of it is needed for correctness, which rests on the API server (a bind is an
// optimistically locked patch; a claim finds its sandbox by owner reference): it saves conflicts
// and API calls while the informer cache lags behind the controller's own writes, and a restarted
// controller, whose cache starts from a fresh list, does without it.

// How long the hints hold.
const (
	// reservationTTL bounds how long a member stays skipped after this process bound it, or
	// failed to, while the cache has not caught up.
	reservationTTL = 10 * time.Second
	// expectationTTL is how long a claim trusts that the sandbox it just bound or created will
	// show up in the cache, before it asks the API server.
	expectationTTL = 10 * time.Second
)

// newReservations returns the reservations of warm-pool members this process's workers bind.
func newReservations(clk clock.PassiveClock) *inflight.Reservations[*sandboxv1beta1.Sandbox] {
	return inflight.NewReservations[*sandboxv1beta1.Sandbox](clk, reservationTTL)
}

// claimMemory remembers, per claim, the sandbox it just bound or created, the resourceVersion
// its last status write replaced, and the Pod its settings went into.
type claimMemory struct {
	// sandboxes maps a claim to the name of the sandbox it bound or created, until the cache
	// shows it. Entries do not expire: an old one sends the claim to the API server instead.
	sandboxes *inflight.Store[types.UID, string]
	// status holds the versions the claims' last status writes replaced: while the cache still
	// shows that version, the cache is behind the write.
	status *inflight.Versions
	// settings maps a claim to the Pod its settings were delivered into (settingsKey).
	settings *inflight.Store[types.UID, string]
}

func newClaimMemory(clk clock.PassiveClock) *claimMemory {
	return &claimMemory{sandboxes: inflight.NewStore[types.UID, string](clk, 0), status: inflight.NewVersions(clk),
		settings: inflight.NewStore[types.UID, string](clk, 0)}
}

// deliveredSettings records that the claim's settings went into the Pod key names (settingsKey).
func (m *claimMemory) deliveredSettings(claim types.UID, key string) { m.settings.Set(claim, key) }

// settingsDelivered reports whether the claim's settings went into the Pod key names. A
// restarted controller delivers them once more; the agent answers a repeated request as the
// first.
func (m *claimMemory) settingsDelivered(claim types.UID, key string) bool {
	have, _, found := m.settings.Get(claim)
	return found && have == key
}

// expect records that claim now controls the sandbox called name.
func (m *claimMemory) expect(claim types.UID, name string) { m.sandboxes.Set(claim, name) }

// expected returns the sandbox claim bound or created, if any, and whether that was recent
// enough to wait for the cache rather than ask the API server.
func (m *claimMemory) expected(claim types.UID) (name string, recent bool) {
	name, age, found := m.sandboxes.Get(claim)
	return name, found && age < expectationTTL
}

// observed drops the expectation of claim: the cache shows its sandbox, or it is known gone.
func (m *claimMemory) observed(claim types.UID) { m.sandboxes.Forget(claim) }

// statusWritten records that a write of this process (its status, or the annotation patch)
// replaced version base of claim.
func (m *claimMemory) statusWritten(claim types.UID, base string) { m.status.Wrote(claim, base) }

// cacheBehind reports whether the cached claim, at resourceVersion rv, predates this process's
// last status write; a newer version's event is then on its way.
func (m *claimMemory) cacheBehind(claim types.UID, rv string) bool { return m.status.Behind(claim, rv) }

// forget drops everything about a deleted claim.
func (m *claimMemory) forget(claim types.UID) {
	m.sandboxes.Forget(claim)
	m.status.Forget(claim)
	m.settings.Forget(claim)
}
