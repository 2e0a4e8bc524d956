package status

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestWrite writes the status of a Pod through a fake API server that
// answers the status update as each case says, and checks the outcome, what the server holds and
// which events were emitted.
func TestWrite(t *testing.T) {
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	cases := map[string]struct {
		stored      corev1.PodPhase
		desired     corev1.PodPhase
		updateErr   error
		wantOutcome Outcome
		wantErr     bool
		wantStored  corev1.PodPhase
		wantEvents  int
		wantUpdates int
	}{
		"unchanged writes nothing and emits": {stored: corev1.PodRunning, desired: corev1.PodRunning,
			wantOutcome: Unchanged, wantStored: corev1.PodRunning, wantEvents: 1},
		"changed writes once and emits": {stored: corev1.PodPending, desired: corev1.PodRunning,
			wantOutcome: Written, wantStored: corev1.PodRunning, wantEvents: 1, wantUpdates: 1},
		"conflict emits nothing": {stored: corev1.PodPending, desired: corev1.PodRunning, updateErr: conflict(),
			wantOutcome: Conflict, wantStored: corev1.PodPending, wantUpdates: 1},
		"gone emits nothing": {stored: corev1.PodPending, desired: corev1.PodRunning, updateErr: gone,
			wantOutcome: Gone, wantStored: corev1.PodPending, wantUpdates: 1},
		"other error fails": {stored: corev1.PodPending, desired: corev1.PodRunning, updateErr: errors.New("boom"),
			wantOutcome: Failed, wantErr: true, wantStored: corev1.PodPending, wantUpdates: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := writeThrough(t, Write[corev1.PodStatus], tc.stored, tc.desired, tc.updateErr)
			if (got.err != nil) != tc.wantErr {
				t.Fatalf("Write() error = %v, want error %v", got.err, tc.wantErr)
			}
			if got.outcome != tc.wantOutcome {
				t.Errorf("Write() = %v, want %v", got.outcome, tc.wantOutcome)
			}
			if diff := cmp.Diff(tc.wantStored, got.stored); diff != "" {
				t.Errorf("stored phase (-want +got):\n%s", diff)
			}
			if got.updates != tc.wantUpdates || got.events != tc.wantEvents {
				t.Errorf("status updates = %d, events = %d; want %d, %d", got.updates, got.events, tc.wantUpdates, tc.wantEvents)
			}
		})
	}
}

// writeFn is Write or WriteNow for a Pod's status.
type writeFn func(context.Context, *Writer, client.Object, *corev1.PodStatus, corev1.PodStatus, ...Event) (Outcome, error)

// written is what a status write through writeThrough did.
type written struct {
	outcome Outcome
	err     error
	stored  corev1.PodPhase // the phase the fake API server holds afterwards
	updates int             // status updates the server was sent
	events  int             // events emitted
}

// writeThrough writes a Pod stored with phase stored to phase desired with write, through a fake
// API server that answers each status update with updateErr (nil: applies it).
func writeThrough(t *testing.T, write writeFn, stored, desired corev1.PodPhase, updateErr error) written {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Phase: stored}}
	var w written
	c := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(pod).WithInterceptorFuncs(interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.updates++
			if updateErr != nil {
				return updateErr
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}).Build()
	rec := events.NewFakeRecorder(4)
	read := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), read); err != nil {
		t.Fatal(err)
	}
	want := *read.Status.DeepCopy()
	want.Phase = desired
	w.outcome, w.err = write(context.Background(), NewWriter(c, rec, "test-manager", "Pod"), read, &read.Status, want,
		Event{Type: corev1.EventTypeNormal, Reason: "Done", Action: "Test", Note: "done"})
	after := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), after); err != nil {
		t.Fatal(err)
	}
	w.stored, w.events = after.Status.Phase, len(rec.Events)
	return w
}

// TestWriteCarriesResourceVersion checks that a write from a stale read loses to a newer version.
func TestWriteCarriesResourceVersion(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(pod).Build()
	ctx := context.Background()
	stale := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), stale); err != nil {
		t.Fatal(err)
	}
	newer := stale.DeepCopy()
	newer.Status.Phase = corev1.PodFailed
	if err := c.Status().Update(ctx, newer); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(c, events.NewFakeRecorder(1), "test-manager", "Pod")
	got, err := Write(ctx, w, stale, &stale.Status, corev1.PodStatus{Phase: corev1.PodRunning})
	if err != nil || got != Conflict {
		t.Fatalf("Write() = %v, %v; want Conflict, nil", got, err)
	}
	if got.RequeueAfter() != ConflictRetry {
		t.Errorf("RequeueAfter() = %v, want %v", got.RequeueAfter(), ConflictRetry)
	}
}

func conflict() error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("newer version"))
}

// TestWarningsOnly checks that a controller recording no Normal Events still reports Warnings.
func TestWarningsOnly(t *testing.T) {
	fake := events.NewFakeRecorder(4)
	rec := WarningsOnly(fake)
	pod := &corev1.Pod{}
	rec.Eventf(pod, nil, corev1.EventTypeNormal, "SandboxReady", "Observe", "Sandbox is ready")
	rec.Eventf(pod, nil, corev1.EventTypeWarning, "SandboxPodCreateFailed", "CreatePod", "Creating Pod %s failed", "p")
	close(fake.Events)
	var got []string
	for e := range fake.Events {
		got = append(got, e)
	}
	if want := []string{"Warning SandboxPodCreateFailed Creating Pod p failed"}; !slices.Equal(got, want) {
		t.Errorf("events recorded = %q; want %q", got, want)
	}
}

// TestWriteNow writes the status of a Pod as a pass does that must know it is in the API server
// before its next step (a memory snapshot recorded before the Pod is deleted): every outcome but
// Unchanged and Written is an error, so that the step does not happen, and the events still
// follow the write.
func TestWriteNow(t *testing.T) {
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	cases := map[string]struct {
		stored, desired corev1.PodPhase
		updateErr       error
		wantErr         error // errors.Is; nil for none
		wantOutcome     Outcome
		wantStored      corev1.PodPhase
		wantEvents      int
		wantUpdates     int
	}{
		"unchanged writes nothing and emits": {stored: corev1.PodRunning, desired: corev1.PodRunning, wantStored: corev1.PodRunning, wantEvents: 1},
		"changed writes once and emits": {stored: corev1.PodPending, desired: corev1.PodRunning, wantOutcome: Written,
			wantStored: corev1.PodRunning, wantEvents: 1, wantUpdates: 1},
		"conflict is an error and emits nothing": {stored: corev1.PodPending, desired: corev1.PodRunning, updateErr: conflict(),
			wantErr: conflict(), wantOutcome: Conflict, wantStored: corev1.PodPending, wantUpdates: 1},
		"gone is an error and emits nothing": {stored: corev1.PodPending, desired: corev1.PodRunning, updateErr: gone,
			wantErr: gone, wantOutcome: Gone, wantStored: corev1.PodPending, wantUpdates: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := writeThrough(t, WriteNow[corev1.PodStatus], tc.stored, tc.desired, tc.updateErr)
			switch {
			case tc.wantErr == nil && got.err != nil:
				t.Fatalf("WriteNow() = %v, want nil", got.err)
			case tc.wantErr != nil && (got.err == nil || got.err.Error() == tc.wantErr.Error()):
				t.Fatalf("WriteNow() = %v, want an error naming the Pod that wraps %v", got.err, tc.wantErr)
			}
			if got.outcome != tc.wantOutcome {
				t.Errorf("WriteNow() = %v, want %v", got.outcome, tc.wantOutcome)
			}
			if diff := cmp.Diff(tc.wantStored, got.stored); diff != "" {
				t.Errorf("stored phase (-want +got):\n%s", diff)
			}
			if got.updates != tc.wantUpdates || got.events != tc.wantEvents {
				t.Errorf("status updates = %d, events = %d; want %d, %d", got.updates, got.events, tc.wantUpdates, tc.wantEvents)
			}
		})
	}
}
