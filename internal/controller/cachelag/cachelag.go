// Package cachelag tells a reconciler when its informer cache still shows an object as it was
// before the reconciler's own last write to it.
//
// After a write, the written version's watch event is on its way and will requeue the object; a
// pass that runs before it arrives sees the old version and would send the same write again.
// Remembering the resourceVersion each write replaced is enough to skip such a pass: while the
// cache shows that version, it is behind. Versions are only compared for equality, as the API
// asks.
package cachelag

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Writes remembers, per object UID, the resourceVersion this process last wrote from. It is safe
// for concurrent use.
type Writes struct {
	mu   sync.Mutex
	base map[types.UID]string
}

// New returns an empty Writes.
func New() *Writes { return &Writes{base: map[types.UID]string{}} }

// Wrote records that a write replaced version base of the object with uid.
func (w *Writes) Wrote(uid types.UID, base string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.base[uid] = base
}

// Behind reports whether the cached object, at resourceVersion rv, predates this process's last
// write to it. Once the cache shows another version the entry is dropped.
func (w *Writes) Behind(uid types.UID, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	base, ok := w.base[uid]
	if ok && base != rv {
		delete(w.base, uid)
		return false
	}
	return ok
}

// Forget drops the entry of an object that is gone.
func (w *Writes) Forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.base, uid)
}
