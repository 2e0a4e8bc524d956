package inflight

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Outcome is how the attempt on a reserved object ended, for Settle.
type Outcome int

const (
	// Failed means the attempt failed for a reason that says nothing about the object (the API server
	// did not answer); the reservation is dropped and the object may be taken again at once.
	Failed Outcome = iota
	// Done means this process changed the object (bound it); the cache still shows it as it was.
	Done
	// Lost means the attempt at the cached resourceVersion met a conflict (someone else changed the
	// object), or the object turned out not to qualify; it is skipped until the cache shows a
	// newer version.
	Lost
)

// reservation is why an object is reserved.
type reservation struct {
	// inFlight is true while a worker of this process works on the object; then there is no
	// resourceVersion or expiry.
	inFlight bool
	outcome  Outcome
	// resourceVersion is the version the attempt was made at: the object is skipped while the
	// cache still has that version.
	resourceVersion string
}

// Reservations keep this process's workers from working on the same object at once, and from
// retrying one while the cache still shows it as it was before this process's attempt on it. The
// exclusion that matters is the API server's: two processes may pick the same object, and one of
// their optimistically locked writes then fails with a conflict.
type Reservations[T metav1.Object] struct {
	ttl   time.Duration
	store *Store[types.UID, reservation]
}

// NewReservations returns empty Reservations on clk; a settled reservation lapses ttl after it
// was settled even if the cache never shows the object's next version.
func NewReservations[T metav1.Object](clk clock.PassiveClock, ttl time.Duration) *Reservations[T] {
	return &Reservations[T]{ttl: ttl, store: NewStore[types.UID, reservation](clk, ttl)}
}

// Take picks an object of cands that is not reserved, going round from seed modulo len(cands),
// and reserves it in flight. ok is false when every candidate is reserved; wait is then true when
// one of them may still become free (an attempt in flight, or one lost but not yet seen in the
// cache), and false when this process did them all.
func (rs *Reservations[T]) Take(cands []T, seed uint32) (picked T, ok, wait bool) {
	rs.store.mu.Lock()
	defer rs.store.mu.Unlock()
	i := pick(len(cands), seed, func(i int) bool {
		free := false
		rs.store.update(cands[i].GetUID(), func(r *reservation, age time.Duration, found bool) Action {
			switch {
			case !found:
				free = true
				return Drop
			case r.inFlight:
				wait = true
			case r.resourceVersion != cands[i].GetResourceVersion() || age >= rs.ttl:
				free = true
			case r.outcome == Lost:
				wait = true
			}
			return Keep
		})
		return free
	})
	if i < 0 {
		return picked, false, wait
	}
	rs.store.update(cands[i].GetUID(), func(r *reservation, _ time.Duration, _ bool) Action {
		*r = reservation{inFlight: true}
		return Touch
	})
	return cands[i], true, false
}

// Settle records the outcome of the attempt on obj, made at its resourceVersion: Done or Lost keep
// it reserved until the cache moves past that version or the reservation lapses; Failed drops the
// reservation.
func (rs *Reservations[T]) Settle(obj T, outcome Outcome) {
	rs.store.Update(obj.GetUID(), func(r *reservation, _ time.Duration, _ bool) Action {
		if outcome == Failed {
			return Drop
		}
		*r = reservation{outcome: outcome, resourceVersion: obj.GetResourceVersion()}
		return Touch
	})
}

// pick returns the first index i, going round from seed modulo n, for which available(i) is true,
// or -1. Starting at different places spreads the attempts of processes that do not share
// reservations over the candidates, so they rarely try the same one.
func pick(n int, seed uint32, available func(i int) bool) int {
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
