package wake

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func controlledBy(name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Name: name, Controller: ptr.To(true)}}
}

// TestEventsWakeTheWaitsOnTheirObjects: an informer event for an object wakes the waits on it
// and on the object it is tied to (a Pod's Sandbox, a Sandbox's claim, a claim's sandbox), and
// no other wait.
func TestEventsWakeTheWaitsOnTheirObjects(t *testing.T) {
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box", OwnerReferences: controlledBy("claim")}}
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim"}}
	claim.Status.Sandbox.Name = "box"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box-pod", OwnerReferences: controlledBy("box")}}
	cases := map[string]struct {
		obj  any
		wake []string // the names (in ns) whose waits it wakes
	}{
		"a sandbox: it and its claim":          {obj: sb, wake: []string{"box", "claim"}},
		"a claim: it and its sandbox":          {obj: claim, wake: []string{"claim", "box"}},
		"a pod: its sandbox":                   {obj: pod, wake: []string{"box"}},
		"a deleted sandbox's tombstone":        {obj: toolscache.DeletedFinalStateUnknown{Obj: sb}, wake: []string{"box", "claim"}},
		"a sandbox of another namespace: none": {obj: &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "box"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := NewEvents()
			waits := map[string]chan struct{}{}
			for _, n := range []string{"box", "claim", "unrelated"} {
				waits[n] = make(chan struct{}, 1)
				e.subscribe(waits[n], []types.NamespacedName{{Namespace: "ns", Name: n}})
			}
			e.NotifyObject(tc.obj)
			want := map[string]bool{}
			for _, n := range tc.wake {
				want[n] = true
			}
			for n, ch := range waits {
				woken := len(ch) == 1
				if woken != want[n] {
					t.Errorf("the wait on %s woken: %v; want %v", n, woken, want[n])
				}
			}
		})
	}
}

// TestAwaitLooksOnlyOnEvents: a wait looks at the cache once, then once per event on its
// objects, and never on a timer; it ends with its context and leaves nothing subscribed.
func TestAwaitLooksOnlyOnEvents(t *testing.T) {
	e := NewEvents()
	key := types.NamespacedName{Namespace: "ns", Name: "box"}
	looked := make(chan struct{})
	var ready atomic.Bool
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan bool)
	go func() {
		done <- e.Await(ctx, func(context.Context) bool { looked <- struct{}{}; return ready.Load() }, key)
	}()
	<-looked // the first look, at once
	e.Notify(types.NamespacedName{Namespace: "ns", Name: "other"})
	e.Notify(key)
	<-looked // one look for the event on box
	ready.Store(true)
	e.Notify(key)
	<-looked
	if !<-done {
		t.Fatal("Await reported its context ended; want done")
	}
	if n := e.waits(); n != 0 {
		t.Errorf("%d keys still have waits after Await returned", n)
	}
	go func() { done <- e.Await(ctx, func(context.Context) bool { looked <- struct{}{}; return false }, key) }()
	<-looked
	cancel()
	select {
	case <-looked:
		t.Fatal("the wait looked again with no event")
	case got := <-done:
		if got {
			t.Fatal("Await reported done after its context ended")
		}
	}
}
