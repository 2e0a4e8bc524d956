package framework

import (
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Create creates obj and fails the test when the API server refuses it.
func (e *Env) Create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := e.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("Creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// Get reads obj's current state from the API server into obj; it reports false when the object
// is gone.
func (e *Env) Get(t testing.TB, obj client.Object) (bool, error) {
	t.Helper()
	err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// WaitForObject waits until the object named like obj exists and ok (when not nil) accepts it,
// and returns it, read into obj.
func WaitForObject[T client.Object](t testing.TB, e *Env, obj T, ok func(T) (bool, string)) T {
	t.Helper()
	Eventually(t, func() (bool, string) {
		found, err := e.Get(t, obj)
		switch {
		case err != nil:
			return false, err.Error()
		case !found:
			return false, fmt.Sprintf("%T %s does not exist", obj, obj.GetName())
		case ok == nil:
			return true, ""
		}
		return ok(obj)
	})
	return obj
}

// Events lists the events.k8s.io/v1 events in ns about the object of kind called name.
func (e *Env) Events(t testing.TB, ns, kind, name string) ([]eventsv1.Event, error) {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := e.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out = append(out, ev)
		}
	}
	return out, nil
}

// WaitForEvent waits for an event of eventType and reason about the object of kind called name
// whose note contains noteSubstr, and returns it.
func (e *Env) WaitForEvent(t testing.TB, ns, kind, name, eventType, reason, noteSubstr string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	Eventually(t, func() (bool, string) {
		evs, err := e.Events(t, ns, kind, name)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range evs {
			if ev.Type == eventType && ev.Reason == reason && strings.Contains(ev.Note, noteSubstr) {
				found = ev
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s/%s %q", ev.Type, ev.Reason, ev.Note))
		}
		return false, fmt.Sprintf("events about %s %s: %v; want %s/%s containing %q", kind, name, seen, eventType, reason, noteSubstr)
	})
	return found
}

// Read reads the object of type T called name in ns, and fails the test when it cannot.
//
//	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "a")
func Read[T any, PT interface {
	*T
	client.Object
}](t testing.TB, e *Env, ns, name string) PT {
	t.Helper()
	obj := PT(new(T))
	if err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("Reading %s %s: %v", e.kind(obj), name, err)
	}
	return obj
}

// Update changes the stored object named like obj with mutate, retrying on conflicts (controllers
// write it too), and leaves the result in obj.
func Update[T client.Object](t testing.TB, e *Env, obj T, mutate func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return e.Client.Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatalf("Updating %s %s: %v", e.kind(obj), obj.GetName(), err)
	}
}

// WaitGone waits until the object named like obj no longer exists.
func (e *Env) WaitGone(t testing.TB, obj client.Object) {
	t.Helper()
	e.waitDeleted(t, obj, false)
}

// WaitDeleting waits until the object named like obj is gone or being deleted. Use it for objects
// that keep a finalizer only a controller the test environment does not run removes, such as a
// PVC's protection finalizer.
func (e *Env) WaitDeleting(t testing.TB, obj client.Object) {
	t.Helper()
	e.waitDeleted(t, obj, true)
}

// waitDeleted waits until the object named like obj is gone or, when terminating is enough, has a
// deletionTimestamp.
func (e *Env) waitDeleted(t testing.TB, obj client.Object, terminatingIsEnough bool) {
	t.Helper()
	Eventually(t, func() (bool, string) {
		found, err := e.Get(t, obj)
		if err != nil {
			return false, err.Error()
		}
		done := !found || (terminatingIsEnough && obj.GetDeletionTimestamp() != nil)
		return done, fmt.Sprintf("%s %s still exists (deletionTimestamp %v)", e.kind(obj), obj.GetName(), obj.GetDeletionTimestamp())
	})
}

// IsControlledBy reports whether owner is obj's controller, with the reference a garbage collector
// follows: owner's API version, kind, name and UID, with controller and blockOwnerDeletion set. The
// string describes obj's controller reference.
func (e *Env) IsControlledBy(obj metav1.Object, owner client.Object) (bool, string) {
	gvk, err := apiutil.GVKForObject(owner, e.Scheme)
	if err != nil {
		return false, err.Error()
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return false, fmt.Sprintf("%s has no controller (owner references %v)", obj.GetName(), obj.GetOwnerReferences())
	}
	ok := ref.UID == owner.GetUID() && ref.Kind == gvk.Kind && ref.APIVersion == gvk.GroupVersion().String() &&
		ref.Name == owner.GetName() && ptr.Deref(ref.BlockOwnerDeletion, false)
	return ok, fmt.Sprintf("%s has controller reference %+v; want %s %s (uid %s)", obj.GetName(), *ref, gvk.Kind, owner.GetName(), owner.GetUID())
}

// kind names obj's kind for messages: its Kind in e.Scheme, else its Go type.
func (e *Env) kind(obj k8sruntime.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, e.Scheme); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}
