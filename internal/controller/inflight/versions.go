package inflight

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// VersionsExpiry is how long a remembered version is kept at most. The event of the write that
// replaced it normally arrives within milliseconds and spends the entry; expiry only bounds the
// memory of writes whose object went without an event this process saw.
const VersionsExpiry = 10 * time.Minute

// Versions tells a reconciler when its informer cache still shows an object as it was before the
// reconciler's own last write to it.
//
// After a write, the written version's watch event is on its way and will requeue the object; a
// pass that runs before it arrives sees the old version and would send the same write again.
// Remembering the resourceVersion each write replaced is enough to skip such a pass: while the
// cache shows that version, it is behind. A pass that writes an object twice (its metadata, then
// its status) replaces two versions, and the cache may show either: both are remembered until the
// cache shows another. Versions are only compared for equality, as the API asks.
type Versions struct {
	store *Store[types.UID, []string]
}

// NewVersions returns an empty Versions on clk.
func NewVersions(clk clock.PassiveClock) *Versions {
	return &Versions{store: NewStore[types.UID, []string](clk, VersionsExpiry)}
}

// Wrote records that a write replaced version base of the object with uid.
func (v *Versions) Wrote(uid types.UID, base string) {
	v.store.Update(uid, func(bases *[]string, _ time.Duration, _ bool) Action {
		if !slices.Contains(*bases, base) {
			*bases = append(*bases, base)
		}
		return Touch
	})
}

// Behind reports whether the cached object, at resourceVersion rv, predates this process's last
// writes to it. Once the cache shows another version the entry is dropped.
func (v *Versions) Behind(uid types.UID, rv string) (behind bool) {
	v.store.Update(uid, func(bases *[]string, _ time.Duration, found bool) Action {
		behind = found && slices.Contains(*bases, rv)
		if !behind {
			return Drop
		}
		return Keep
	})
	return behind
}

// Forget drops the entry of an object that is gone.
func (v *Versions) Forget(uid types.UID) { v.store.Forget(uid) }
