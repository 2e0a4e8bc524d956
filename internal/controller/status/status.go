// Package status writes the status of the objects kubox reconciles, one way for every kind.
//
// A reconcile pass computes the status it wants as a pure function of what it observed, then
// hands it to Write with the events that describe the pass. Write compares the wanted status with
// the one the pass read and writes only when they differ, with the resourceVersion the pass read
// (optimistic concurrency), so a pass with a stale view of the object can never overwrite a newer
// status. The conflict policy is the same for every controller: a conflict means a newer version
// of the object exists, so nothing is logged above debug level, no error is returned (an error
// would back the object off exponentially for what is routine) and the object is looked at again
// after ConflictRetry, should the newer version's own event not come first. An object that is gone
// needs no status and no requeue. A pass whose next step must follow the write uses WriteNow,
// which reports a conflict or a missing object as an error instead.
//
// Events are emitted only once the status they describe is in the API server: after a successful
// write, or when the status already was what the pass wanted. A pass whose write met a conflict or
// a missing object emits none; the next pass observes what was done and reports it. Events about
// an action the pass carried out that no later pass will see again (a child it deleted) are
// emitted with Emit as soon as the action is done.
package status

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConflictRetry is how soon an object whose status write met a newer version is looked at again,
// should that version's own event not come first.
const ConflictRetry = 250 * time.Millisecond

// Event is an event a pass emits once its status is written.
type Event struct {
	// Related is the other object the event is about (a child), or nil.
	Related runtime.Object
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is a PascalCase constant of the controller.
	Reason string
	// Action is what the controller did or failed to do.
	Action string
	// Note is the human-readable message.
	Note string
}

// Outcome is what Write did.
type Outcome int

const (
	// Unchanged means the status already was the wanted one; nothing was written.
	Unchanged Outcome = iota
	// Written means the wanted status was written.
	Written
	// Conflict means the object changed since the pass read it; nothing was written.
	Conflict
	// Gone means the object no longer exists.
	Gone
	// Failed means the write failed; Write returns the error.
	Failed
)

// Settled reports whether the object's status is the one the pass wanted: its events are emitted.
func (o Outcome) Settled() bool { return o == Unchanged || o == Written }

// RequeueAfter is how soon the object must be looked at again because of the write: ConflictRetry
// after a conflict, 0 (no need) otherwise.
func (o Outcome) RequeueAfter() time.Duration {
	if o == Conflict {
		return ConflictRetry
	}
	return 0
}

// Writer writes statuses with one field manager and emits the events of the passes that wrote
// them. It is safe for concurrent use.
type Writer struct {
	client       client.Client
	recorder     events.EventRecorder
	fieldManager string
	kind         string
}

// NewWriter returns a Writer of the status of objects of kind (for error messages), that writes
// through c as fieldManager and records events with recorder.
func NewWriter(c client.Client, recorder events.EventRecorder, fieldManager, kind string) *Writer {
	return &Writer{client: c, recorder: recorder, fieldManager: fieldManager, kind: kind}
}

// Write sets *current, the status field of obj, to desired and writes obj's status, at the
// resourceVersion obj carries, when desired differs from what *current held. Once the status is
// settled it emits evs about obj. A conflict or a missing object is an Outcome, not an error.
func Write[S any](ctx context.Context, w *Writer, obj client.Object, current *S, desired S, evs ...Event) (Outcome, error) {
	out, err := write(ctx, w, obj, current, desired)
	if out.Settled() {
		w.Emit(obj, evs...)
	}
	if out == Conflict || out == Gone {
		return out, nil
	}
	return out, err
}

// WriteNow is Write for a pass whose next step must follow the status write (status.memory is
// recorded before the Pod it was taken of is deleted): it compares and writes as Write does, at
// the resourceVersion obj carries, and emits evs once the status is settled, but a conflict or a
// missing object is an error too, so that the step does not happen; the caller returns the error
// and the object is looked at again with backoff. The conflict policy of Write (no error, a retry
// after ConflictRetry) is for passes with no step after the write.
func WriteNow[S any](ctx context.Context, w *Writer, obj client.Object, current *S, desired S, evs ...Event) (Outcome, error) {
	out, err := write(ctx, w, obj, current, desired)
	switch out {
	case Unchanged, Written:
		w.Emit(obj, evs...)
	case Conflict, Gone:
		err = fmt.Errorf("writing the status of %s %s: %w", w.kind, obj.GetName(), err)
	}
	return out, err
}

// Emit records evs about obj now, whatever becomes of the pass's status write: for events about
// actions the pass completed.
func (w *Writer) Emit(obj runtime.Object, evs ...Event) {
	for _, e := range evs {
		w.recorder.Eventf(obj, e.Related, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
}

// write writes the status; the error of a Conflict or Gone is the API server's, for WriteNow.
func write[S any](ctx context.Context, w *Writer, obj client.Object, current *S, desired S) (Outcome, error) {
	if equality.Semantic.DeepEqual(desired, *current) {
		return Unchanged, nil
	}
	*current = desired
	err := w.client.Status().Update(ctx, obj, client.FieldOwner(w.fieldManager))
	switch {
	case err == nil:
		return Written, nil
	case apierrors.IsConflict(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Status write met a newer version; retrying", "reason", err.Error())
		return Conflict, err
	case apierrors.IsNotFound(err):
		return Gone, err
	}
	return Failed, fmt.Errorf("writing the status of %s %s: %w", w.kind, obj.GetName(), err)
}

// NoEvents returns a recorder that records nothing: that of a controller configured to record
// no Events at all (the claim controller's agent-sandbox --disable-claim-events).
func NoEvents() events.EventRecorder { return noEvents{} }

type noEvents struct{}

func (noEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

// WarningsOnly returns a recorder that passes Warning events to recorder and drops the others:
// that of a controller configured to record no Normal Events, which must still report what
// went wrong.
func WarningsOnly(recorder events.EventRecorder) events.EventRecorder {
	return warningsOnly{recorder}
}

type warningsOnly struct{ events.EventRecorder }

func (w warningsOnly) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if eventtype == corev1.EventTypeWarning {
		w.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
}
