// Package expectations remembers, per controller object, the children a reconciler has created or
// deleted but its informer cache has not shown yet, so that the reconciler does not act twice on a
// stale view of the world. It is the analog of Kubernetes' UIDTrackingControllerExpectations.
//
// A reconciler that creates children from a count ("the pool needs 3 more") reads its children
// from a cache that lags behind the API server. Without expectations, two passes in quick
// succession (a burst of claims taking members from a warm pool) both see the children missing
// and both create them. With expectations, a pass acts only when everything the previous passes
// did has been observed:
//
//	if ok, _ := e.Satisfied(key); !ok { return } // wait for the informer
//	e.ExpectCreations(key, n)
//	for each create: CreationSucceeded(key, uid) or CreationFailed(key)
//	e.ExpectDeletion(key, uid); on a failed delete: DeletionObserved(key, uid)
//
// and the informer's event handler calls CreationObserved and DeletionObserved as the children
// appear and go. Both are tracked by UID, so events about children the reconciler did not create
// (a restart's initial list, someone else's object) never satisfy an expectation by mistake.
//
// Expectations expire: one not observed within the timeout (an event lost when a watch was
// re-listed) counts as satisfied, so a controller is never stuck.
package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// DefaultTimeout is how long an expectation waits to be observed before it expires, as in
// Kubernetes' controllers. An informer normally shows a change within milliseconds; the timeout
// only matters when an event was lost.
const DefaultTimeout = 5 * time.Minute

// Expectations holds the pending expectations of every controller object, by key (typically
// namespace/name). It is safe for concurrent use: reconcilers call it from their workers and
// informers from their event handlers.
type Expectations struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	timeout time.Duration
	records map[string]*record
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
	// lastExpected is when an expectation was last added; the record expires timeout after it.
	lastExpected time.Time
}

func (r *record) pending() bool {
	return r.inFlight > 0 || r.creates.Len() > 0 || r.deletes.Len() > 0
}

// New returns empty Expectations whose entries expire timeout after they were last added to.
func New(clk clock.PassiveClock, timeout time.Duration) *Expectations {
	return &Expectations{clock: clk, timeout: timeout, records: map[string]*record{}}
}

// get returns key's record, creating it when create is true; the caller holds mu.
func (e *Expectations) get(key string, create bool) *record {
	r := e.records[key]
	if r == nil && create {
		r = &record{creates: sets.New[types.UID](), early: sets.New[types.UID](), deletes: sets.New[types.UID]()}
		e.records[key] = r
	}
	return r
}

// Satisfied reports whether key has nothing pending: every creation and deletion it expected has
// been observed, or the expectations expired. When it has, expiresIn is how long until they
// expire, for a timer that looks again even if no event comes.
func (e *Expectations) Satisfied(key string) (ok bool, expiresIn time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.get(key, false)
	if r == nil || !r.pending() {
		return true, 0
	}
	left := r.lastExpected.Add(e.timeout).Sub(e.clock.Now())
	if left <= 0 {
		delete(e.records, key)
		return true, 0
	}
	return false, left
}

// ExpectCreations records that n children of key are about to be created. Each must be followed
// by CreationSucceeded or CreationFailed.
func (e *Expectations) ExpectCreations(key string, n int) {
	if n <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.get(key, true)
	r.inFlight += n
	r.lastExpected = e.clock.Now()
}

// CreationSucceeded records that one of the creations ExpectCreations announced made the child
// uid; it stays expected until CreationObserved, unless the informer showed it already.
func (e *Expectations) CreationSucceeded(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.get(key, true)
	// Look at the early observations before settling: settling the last in-flight creation
	// empties them.
	if r.early.Has(uid) {
		r.early.Delete(uid)
	} else {
		r.creates.Insert(uid)
		r.lastExpected = e.clock.Now()
	}
	e.settle(r)
	e.cleanup(key, r)
}

// CreationFailed records that one of the creations ExpectCreations announced was not made (the
// API server refused it, or it was never sent).
func (e *Expectations) CreationFailed(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.get(key, false); r != nil {
		e.settle(r)
		e.cleanup(key, r)
	}
}

// settle accounts for one in-flight creation being answered; the caller holds mu.
func (e *Expectations) settle(r *record) {
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
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.get(key, false)
	switch {
	case r == nil:
	case r.creates.Has(uid):
		r.creates.Delete(uid)
		e.cleanup(key, r)
	case r.inFlight > 0:
		r.early.Insert(uid)
	}
}

// ExpectDeletion records that child uid of key is about to be deleted. If the delete call fails,
// call DeletionObserved: nothing will be observed.
func (e *Expectations) ExpectDeletion(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.get(key, true)
	r.deletes.Insert(uid)
	r.lastExpected = e.clock.Now()
}

// DeletionObserved records that the informer shows child uid of key gone or being deleted, or
// that its deletion was not made after all.
func (e *Expectations) DeletionObserved(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.get(key, false); r != nil && r.deletes.Has(uid) {
		r.deletes.Delete(uid)
		e.cleanup(key, r)
	}
}

// Forget drops everything key expects, when the object itself is gone.
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}

// cleanup drops a record with nothing pending, so the map holds only objects that wait; the
// caller holds mu.
func (e *Expectations) cleanup(key string, r *record) {
	if !r.pending() {
		delete(e.records, key)
	}
}
