package inflight

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SweepAbove is the number of entries above which a store drops its expired entries as it grows.
const SweepAbove = 1024

// Action says what becomes of an entry after Update looked at it.
type Action int

const (
	// Keep keeps the entry, stored with its value as fn left it and its time unchanged (a new
	// entry is stamped now).
	Keep Action = iota
	// Touch keeps the entry and stamps it now.
	Touch
	// Drop removes the entry, or stores nothing for a new one.
	Drop
)

// Store maps keys to values stamped with when they were last touched. An entry older than the
// store's expiry is swept once the store holds more than SweepAbove entries; expiry 0 means
// entries never expire and are only dropped or forgotten. It is safe for concurrent use.
type Store[K comparable, V any] struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	expiry  time.Duration
	entries map[K]*stamped[V]
}

type stamped[V any] struct {
	value V
	at    time.Time
}

// NewStore returns an empty store on clk whose entries expire expiry after they were last touched.
func NewStore[K comparable, V any](clk clock.PassiveClock, expiry time.Duration) *Store[K, V] {
	return &Store[K, V]{clock: clk, expiry: expiry, entries: map[K]*stamped[V]{}}
}

// Get returns k's value and how long ago it was last touched; found is false when there is none.
func (s *Store[K, V]) Get(k K) (value V, age time.Duration, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[k]
	if !ok {
		return value, 0, false
	}
	return e.value, s.clock.Since(e.at), true
}

// Set stores v as k's value, stamped now.
func (s *Store[K, V]) Set(k K, v V) {
	s.Update(k, func(value *V, _ time.Duration, _ bool) Action {
		*value = v
		return Touch
	})
}

// Update runs fn on k's entry as one atomic step: value points at the entry's value (the zero
// value when found is false), age is how long ago it was last touched, and the Action fn returns
// says what becomes of the entry.
func (s *Store[K, V]) Update(k K, fn func(value *V, age time.Duration, found bool) Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.update(k, fn)
}

// update is Update with mu held, for the types of this package that look at several entries in
// one step.
func (s *Store[K, V]) update(k K, fn func(value *V, age time.Duration, found bool) Action) {
	now := s.clock.Now()
	e, found := s.entries[k]
	if !found {
		e = &stamped[V]{at: now}
	}
	switch fn(&e.value, now.Sub(e.at), found) {
	case Drop:
		delete(s.entries, k)
		return
	case Touch:
		e.at = now
	}
	if !found {
		s.entries[k] = e
		s.sweep(now)
	}
}

// sweep drops the expired entries once the store has grown past SweepAbove; mu is held.
func (s *Store[K, V]) sweep(now time.Time) {
	if s.expiry <= 0 || len(s.entries) <= SweepAbove {
		return
	}
	for k, e := range s.entries {
		if now.Sub(e.at) >= s.expiry {
			delete(s.entries, k)
		}
	}
}

// Forget drops k's entry, when its object is gone.
func (s *Store[K, V]) Forget(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, k)
}

// Len is the number of entries.
func (s *Store[K, V]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
