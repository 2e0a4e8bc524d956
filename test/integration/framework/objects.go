package framework

import (
	"fmt"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
