package wake

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Events tells the router's waits that the informer cache changed an object they depend on. A
// wait names them by namespace and name; Sandboxes and SandboxClaims share that key space (a
// claim and its sandbox often share a name), so a wait may be woken for an object it does not
// read: it looks again and goes on waiting.
type Events struct {
	mu   sync.Mutex
	subs map[types.NamespacedName]map[chan struct{}]struct{}
}

// NewEvents returns Events with no wait.
func NewEvents() *Events {
	return &Events{subs: map[types.NamespacedName]map[chan struct{}]struct{}{}}
}

// Notify wakes every wait on key.
func (e *Events) Notify(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs[key] {
		select {
		case ch <- struct{}{}:
		default: // a look is already due
		}
	}
}

// NotifyObject is the informers' event handler: obj (a Sandbox, SandboxClaim or Pod, or the
// tombstone of one) changed. It wakes the waits on it and on the object it is tied to: a
// Sandbox's controller (its claim), a claim's bound sandbox, a Pod's controller (its Sandbox).
func (e *Events) NotifyObject(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	e.Notify(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
	var tied string
	switch t := obj.(type) {
	case *sandboxv1beta1.Sandbox, *corev1.Pod:
		if ref := metav1.GetControllerOf(o); ref != nil {
			tied = ref.Name
		}
	case *extv1beta1.SandboxClaim:
		tied = t.Status.Sandbox.Name
	}
	if tied != "" && tied != o.GetName() {
		e.Notify(types.NamespacedName{Namespace: o.GetNamespace(), Name: tied})
	}
}

// Await runs check now and again after every Notify of one of keys, until check reports done;
// it reports false when ctx ends first. It never looks on a timer: what check reads must come
// from the cache whose events reach Notify.
func (e *Events) Await(ctx context.Context, check func(context.Context) bool, keys ...types.NamespacedName) bool {
	ch := make(chan struct{}, 1)
	e.subscribe(ch, keys)
	defer e.unsubscribe(ch, keys)
	for {
		if check(ctx) {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func (e *Events) subscribe(ch chan struct{}, keys []types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		if e.subs[k] == nil {
			e.subs[k] = map[chan struct{}]struct{}{}
		}
		e.subs[k][ch] = struct{}{}
	}
}

func (e *Events) unsubscribe(ch chan struct{}, keys []types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		delete(e.subs[k], ch)
		if len(e.subs[k]) == 0 {
			delete(e.subs, k)
		}
	}
}

// waits is how many keys have waits on them (for tests: a wait that ended leaves none).
func (e *Events) waits() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs)
}
