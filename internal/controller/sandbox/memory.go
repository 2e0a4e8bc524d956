package sandbox

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// patchMemory remembers, per Pod, the resourceVersion this process last patched from. While the
// informer cache still shows that version, the cache is behind the patch: the patched version's
// event is on its way and will requeue the Sandbox, so patching again from the stale copy would
// only repeat the same write. Under a burst of claims, when the cache lags by hundreds of
// milliseconds, this saves a Pod patch on a good share of them.
type patchMemory struct {
	mu   sync.Mutex
	base map[types.UID]string
}

func newPatchMemory() *patchMemory { return &patchMemory{base: map[types.UID]string{}} }

// patched records that a patch replaced version base of the Pod with uid.
func (m *patchMemory) patched(uid types.UID, base string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.base[uid] = base
}

// cacheBehind reports whether the cached Pod, at resourceVersion rv, predates this process's last
// patch of it. Once the cache shows another version the entry is dropped.
func (m *patchMemory) cacheBehind(uid types.UID, rv string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	base, ok := m.base[uid]
	if ok && base != rv {
		delete(m.base, uid)
		return false
	}
	return ok
}

// forget drops the entry of a Pod that is gone.
func (m *patchMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.base, uid)
}
