package inflight

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// DefaultExpectationsTimeout is how long an expectation waits to be observed before it expires,
// as in Kubernetes' controllers. An informer normally shows a change within milliseconds; the
// timeout only matters when an event was lost.
const DefaultExpectationsTimeout = 5 * time.Minute

// Expectations remembers, per controller object, the children a reconciler has created or
// deleted but its informer cache has not shown yet, so that the reconciler does not act twice on
// a stale view of the world.
//
// A reconciler that creates children from a count ("the pool needs 3 more") reads its children
// from a cache that lags behind the API server. Without expectations, two passes in quick
// succession (a burst of claims taking members from a warm pool) both see the children missing
// and both create them. With expectations, a pass acts only when everything the previous passes
// did has been observed:
//
//	ok, _ := e.Satisfied(key) // before reading the cache, never after
//	list the children from the cache
//	if !ok { return } // wait for the informer
//	e.ExpectCreations(key, n)
//	for each create: CreationSucceeded(key, uid) or CreationFailed(key)
//	e.ExpectDeletion(key, uid); on a failed delete: DeletionObserved(key, uid)
//
// and the informer's event handler calls CreationObserved and DeletionObserved as the children
// appear and go. Both are tracked by UID, so events about children the reconciler did not create
// (a restart's initial list, someone else's object) never satisfy an expectation by mistake.
//
// Expectations expire: one not observed within the timeout after the last one was added counts
// as satisfied, so a controller is never stuck. Keys are typically namespace/name.
type Expectations struct {
	timeout time.Duration
	store   *Store[string, record]
}

// record is what one controller object is waiting for.
type record struct {
	// inFlight counts creations expected but not yet answered by the API server: their UIDs are
	// not known yet.
	inFlight int
	// creates are created children the informer has not shown yet.
	creates sets.Set[types.UID]
	// early are children the informer showed while creations were in flight: the event can
	// arrive before the create call returns. Emptied when no creation is in flight.
	early sets.Set[types.UID]
	// deletes are children being deleted whose deletion the informer has not shown yet.
	deletes sets.Set[types.UID]
}

func (r *record) pending() bool {
	return r.inFlight > 0 || r.creates.Len() > 0 || r.deletes.Len() > 0
}

// init makes a new record's sets.
func (r *record) init() {
	if r.creates == nil {
		r.creates, r.early, r.deletes = sets.New[types.UID](), sets.New[types.UID](), sets.New[types.UID]()
	}
}

// settled keeps a record with something pending, and drops one with nothing: the store holds only
// objects that wait.
func (r *record) settled() Action {
	if r.pending() {
		return Keep
	}
	return Drop
}

// NewExpectations returns empty Expectations on clk whose entries expire timeout after they were
// last added to.
func NewExpectations(clk clock.PassiveClock, timeout time.Duration) *Expectations {
	return &Expectations{timeout: timeout, store: NewStore[string, record](clk, timeout)}
}

// Satisfied reports whether key has nothing pending: every creation and deletion it expected has
// been observed, or the expectations expired. When it has not, expiresIn is how long until they
// expire, for a timer that looks again even if no event comes.
func (e *Expectations) Satisfied(key string) (ok bool, expiresIn time.Duration) {
	e.store.Update(key, func(r *record, age time.Duration, found bool) Action {
		switch {
		case !found || !r.pending():
			ok = true
			return Drop
		case age >= e.timeout:
			ok = true
			return Drop
		}
		expiresIn = e.timeout - age
		return Keep
	})
	return ok, expiresIn
}

// ExpectCreations records that n children of key are about to be created. Each must be followed
// by CreationSucceeded or CreationFailed.
func (e *Expectations) ExpectCreations(key string, n int) {
	if n <= 0 {
		return
	}
	e.store.Update(key, func(r *record, _ time.Duration, _ bool) Action {
		r.init()
		r.inFlight += n
		return Touch
	})
}

// CreationSucceeded records that one of the creations ExpectCreations announced made the child
// uid; it stays expected until CreationObserved, unless the informer showed it already.
func (e *Expectations) CreationSucceeded(key string, uid types.UID) {
	e.store.Update(key, func(r *record, _ time.Duration, _ bool) Action {
		r.init()
		// Look at the early observations before settling: settling the last in-flight creation
		// empties them.
		touched := false
		if r.early.Has(uid) {
			r.early.Delete(uid)
		} else {
			r.creates.Insert(uid)
			touched = true
		}
		r.settle()
		if a := r.settled(); a == Drop || !touched {
			return a
		}
		return Touch
	})
}

// CreationFailed records that one of the creations ExpectCreations announced was not made (the
// API server refused it, or it was never sent).
func (e *Expectations) CreationFailed(key string) {
	e.store.Update(key, func(r *record, _ time.Duration, found bool) Action {
		if !found {
			return Drop
		}
		r.settle()
		return r.settled()
	})
}

// settle accounts for one in-flight creation being answered.
func (r *record) settle() {
	if r.inFlight > 0 {
		r.inFlight--
	}
	if r.inFlight == 0 {
		r.early = sets.New[types.UID]()
	}
}

// CreationObserved records that the informer shows child uid of key. Call it for every event
// about a child (added, updated or deleted): any of them proves the child was observed.
func (e *Expectations) CreationObserved(key string, uid types.UID) {
	e.store.Update(key, func(r *record, _ time.Duration, found bool) Action {
		switch {
		case !found:
			return Drop
		case r.creates.Has(uid):
			r.creates.Delete(uid)
			return r.settled()
		case r.inFlight > 0:
			r.early.Insert(uid)
		}
		return Keep
	})
}

// ExpectDeletion records that child uid of key is about to be deleted. If the delete call fails,
// call DeletionObserved: nothing will be observed.
func (e *Expectations) ExpectDeletion(key string, uid types.UID) {
	e.store.Update(key, func(r *record, _ time.Duration, _ bool) Action {
		r.init()
		r.deletes.Insert(uid)
		return Touch
	})
}

// DeletionObserved records that the informer shows child uid of key gone or being deleted, or
// that its deletion was not made after all.
func (e *Expectations) DeletionObserved(key string, uid types.UID) {
	e.store.Update(key, func(r *record, _ time.Duration, found bool) Action {
		switch {
		case !found:
			return Drop
		case r.deletes.Has(uid):
			r.deletes.Delete(uid)
			return r.settled()
		}
		return Keep
	})
}

// Forget drops everything key expects, when the object itself is gone.
func (e *Expectations) Forget(key string) { e.store.Forget(key) }
