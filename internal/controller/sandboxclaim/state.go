package sandboxclaim

import (
	"time"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// claimState is where one reconcile pass left a claim. A pass starts Unbound; its phases
// (observeSandbox, reconcileLifecycle, acquireSandbox) move it on through the methods below,
// which all go through enter.
type claimState int

const (
	// stateUnbound: the pass has seen no sandbox of the claim and decided nothing; it acquires
	// one.
	stateUnbound claimState = iota
	// stateWaiting: the pass cannot decide yet (a bind in flight in another worker, the cache
	// behind a write of this controller): the status is left as it is and the claim is looked at
	// again shortly.
	stateWaiting
	// stateBound: the claim has its sandbox (observed.sandbox).
	stateBound
	// stateFailed: the claim has no sandbox, for observed.failure's reason.
	stateFailed
	// stateExpired: the claim expired under shutdownPolicy Retain (observed.expiredAt); its
	// sandbox, if any, is deleted and it gets no other.
	stateExpired
	// stateDeleted: the pass deleted the claim (shutdownPolicy Delete or DeleteForeground):
	// there is no status to write.
	stateDeleted
)

var stateNames = [...]string{"Unbound", "Waiting", "Bound", "Failed", "Expired", "Deleted"}

func (s claimState) String() string { return stateNames[s] }

// next reports whether a pass may move a claim from s to to. Expiry and deletion end a pass
// whatever it saw; the other states are reached only from Unbound, the one state that acquires.
func (s claimState) next(to claimState) bool {
	switch {
	case s == stateExpired || s == stateDeleted:
		return false
	case to == stateExpired || to == stateDeleted:
		return true
	}
	return s == stateUnbound
}

// enter moves obs to state to; a move next does not allow leaves the state as it is.
func (obs *observed) enter(to claimState) {
	if obs.state.next(to) {
		obs.state = to
	}
}

// wait leaves the claim's status as it is, and looks at the claim again within d.
func (obs *observed) wait(d time.Duration) {
	obs.enter(stateWaiting)
	obs.requeueSoon(d)
}

// bind records the claim's sandbox.
func (obs *observed) bind(sb *sandboxv1beta1.Sandbox) {
	obs.enter(stateBound)
	obs.sandbox = sb
}

// fail records why the claim has no sandbox.
func (obs *observed) fail(f *failure) {
	obs.enter(stateFailed)
	obs.failure = f
}

// expire records that the claim expired at at under shutdownPolicy Retain.
func (obs *observed) expire(at *time.Time) {
	obs.enter(stateExpired)
	obs.expiredAt = at
}

// claimDeleted records that the pass deleted the claim.
func (obs *observed) claimDeleted() { obs.enter(stateDeleted) }
