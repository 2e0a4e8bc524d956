package wake

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// fakeSandboxes stands for the router's cache and API server: one Sandbox, which resume
// patches (its generation goes up) and the test then makes Ready or failed.
type fakeSandboxes struct {
	mu      sync.Mutex
	sb      *sandboxv1beta1.Sandbox
	resumes atomic.Int32
	// resumeErr fails resume; resumed is closed by the first resume.
	resumeErr error
	resumed   chan struct{}
}

func newFakeSandboxes() *fakeSandboxes {
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box", UID: "uid-1", Generation: 3}}
	sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
	sb.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Minute}}
	sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionFalse,
		Reason: sandboxv1beta1.SandboxReasonSuspended, ObservedGeneration: 3}}
	return &fakeSandboxes{sb: sb, resumed: make(chan struct{})}
}

func (f *fakeSandboxes) current(context.Context, string, string) *sandboxv1beta1.Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sb == nil {
		return nil
	}
	return f.sb.DeepCopy()
}

func (f *fakeSandboxes) resume(context.Context, *sandboxv1beta1.Sandbox, time.Time) (int64, error) {
	if f.resumes.Add(1) == 1 {
		defer close(f.resumed)
	}
	if f.resumeErr != nil {
		return 0, f.resumeErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeRunning
	f.sb.Generation++
	return f.sb.Generation, nil
}

// setReady writes the Ready condition for the current generation, as the controller would.
func (f *fakeSandboxes) setReady(status metav1.ConditionStatus, reason string, ips ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sb.Status.PodIPs = ips
	f.sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionReady, Status: status, Reason: reason,
		Message: "set by the test", ObservedGeneration: f.sb.Generation}}
}

// box is the key of the fake's Sandbox, which its events name.
var box = types.NamespacedName{Namespace: "ns", Name: "box"}

func newTestWaker(t *testing.T, f *fakeSandboxes, timeout time.Duration) *Waker {
	bg := NewBackground()
	t.Cleanup(bg.Stop)
	return NewWaker(WakerDeps{Timeout: timeout, Now: time.Now, Current: f.current, Resume: f.resume, BG: bg, Events: NewEvents(),
		Serving: func(context.Context, *sandboxv1beta1.Sandbox) (bool, *httperr.Error) { return true, nil }})
}

// waitAll starts n requests' waits for the sandbox and returns their outcomes once all ended.
func waitAll(ctx context.Context, w *Waker, f *fakeSandboxes, n int) <-chan []*httperr.Error {
	out := make(chan []*httperr.Error, 1)
	sb := f.current(ctx, "", "")
	go func() {
		errs := make([]*httperr.Error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = w.Wait(ctx, sb) })
		}
		wg.Wait()
		out <- errs
	}()
	return out
}

func TestWakeManyWaitersOneResume(t *testing.T) {
	f := newFakeSandboxes()
	w := newTestWaker(t, f, time.Minute)
	done := waitAll(t.Context(), w, f, 20)
	<-f.resumed
	// Not Ready yet: the new generation is not observed, then Ready without a pod IP.
	f.setReady(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonDependenciesNotReady)
	w.Events.Notify(box)
	f.setReady(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady)
	w.Events.Notify(box)
	select {
	case errs := <-done:
		t.Fatalf("the waits ended before the sandbox had a pod IP: %v", errs)
	case <-time.After(100 * time.Millisecond):
	}
	f.setReady(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "10.0.0.7")
	w.Events.Notify(box)
	for i, herr := range <-done {
		if herr != nil {
			t.Errorf("request %d: %v", i, herr)
		}
	}
	if got := f.resumes.Load(); got != 1 {
		t.Errorf("20 requests resumed the sandbox %d times, want 1", got)
	}
	// A request now finds the sandbox running: no wake.
	if herr := w.Wait(t.Context(), f.current(t.Context(), "", "")); herr != nil || f.resumes.Load() != 1 {
		t.Errorf("a request for the woken sandbox: %v, %d resumes; want none more", herr, f.resumes.Load())
	}
}

func TestWakeTimeout(t *testing.T) {
	f := newFakeSandboxes()
	w := newTestWaker(t, f, 50*time.Millisecond)
	for i, herr := range <-waitAll(t.Context(), w, f, 3) {
		if herr == nil || herr.Code != http.StatusGatewayTimeout || herr.RetryAfter == 0 || !strings.Contains(herr.Msg, "--wake-timeout") {
			t.Errorf("request %d for a sandbox that never gets Ready: %+v, want 504 with Retry-After naming --wake-timeout", i, herr)
		}
	}
	if got := f.resumes.Load(); got != 1 {
		t.Errorf("%d resumes, want 1", got)
	}
}

func TestWakeFailureReason(t *testing.T) {
	f := newFakeSandboxes()
	w := newTestWaker(t, f, time.Minute)
	done := waitAll(t.Context(), w, f, 1)
	<-f.resumed
	f.setReady(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonInvalidConfiguration)
	w.Events.Notify(box)
	for i, herr := range <-done {
		if herr == nil || herr.Code != http.StatusServiceUnavailable || herr.RetryAfter != FailedRetryAfter ||
			!strings.Contains(herr.Msg, sandboxv1beta1.SandboxReasonInvalidConfiguration) {
			t.Errorf("request %d: %+v, want 503 naming InvalidConfiguration", i, herr)
		}
	}
}

func TestWakeResumeFails(t *testing.T) {
	f := newFakeSandboxes()
	f.resumeErr = errors.New("etcd is on fire")
	w := newTestWaker(t, f, time.Minute)
	herr := w.Wait(t.Context(), f.current(t.Context(), "", ""))
	if herr == nil || herr.Code != http.StatusServiceUnavailable || !strings.Contains(herr.Msg, "etcd is on fire") {
		t.Errorf("a failed resume: %+v, want 503 with the error", herr)
	}
}

func TestWakeOutlivesItsClient(t *testing.T) {
	f := newFakeSandboxes()
	w := newTestWaker(t, f, time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	done := waitAll(ctx, w, f, 1)
	<-f.resumed
	cancel()
	if herr := (<-done)[0]; herr == nil || herr.Code != httperr.StatusClientClosedRequest {
		t.Fatalf("a client that went away: %+v, want 499", herr)
	}
	w.mu.Lock()
	op := w.ops["uid-1"]
	w.mu.Unlock()
	if op == nil {
		t.Fatal("the wake ended with its only client; it must go on")
	}
	f.setReady(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "10.0.0.7")
	w.Events.Notify(box)
	<-op.done
	if op.err != nil {
		t.Errorf("the wake: %v", op.err)
	}
}

func TestWakeLateRequestJoins(t *testing.T) {
	f := newFakeSandboxes()
	w := newTestWaker(t, f, time.Minute)
	first := waitAll(t.Context(), w, f, 1)
	<-f.resumed
	// The cache shows the sandbox Running, not Ready yet: a request now joins the wake.
	late := f.current(t.Context(), "", "")
	if !w.Waking(late.UID) {
		t.Fatal("no wake in flight after the resume")
	}
	lateDone := make(chan *httperr.Error, 1)
	go func() { lateDone <- w.Wait(t.Context(), late) }()
	f.setReady(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "10.0.0.7")
	w.Events.Notify(box)
	if herr := (<-first)[0]; herr != nil {
		t.Errorf("the first request: %v", herr)
	}
	if herr := <-lateDone; herr != nil {
		t.Errorf("the late request: %v", herr)
	}
	if w.Waking("uid-1") || f.resumes.Load() != 1 {
		t.Errorf("after the wake: waking %v, %d resumes; want false, 1", w.Waking("uid-1"), f.resumes.Load())
	}
}

func TestWakeNotSuspendedAnyMore(t *testing.T) {
	f := newFakeSandboxes()
	stale := f.current(t.Context(), "", "")
	f.sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeRunning // someone resumed it meanwhile
	w := newTestWaker(t, f, time.Minute)
	if herr := w.Wait(t.Context(), stale); herr != nil || f.resumes.Load() != 0 {
		t.Errorf("a sandbox resumed meanwhile: %v, %d resumes; want no wake", herr, f.resumes.Load())
	}
}

func TestWakeOutcome(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason string, gen int64, ips ...string) *sandboxv1beta1.Sandbox {
		sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box", UID: "uid-1"}}
		sb.Status.PodIPs = ips
		sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionReady, Status: status, Reason: reason,
			ObservedGeneration: gen}}
		return sb
	}
	const gen = 4
	cases := map[string]struct {
		sb       *sandboxv1beta1.Sandbox
		wantDone bool
		wantCode int
	}{
		"deleted": {sb: nil, wantDone: true, wantCode: http.StatusServiceUnavailable},
		"replaced": {sb: func() *sandboxv1beta1.Sandbox {
			s := ready("True", "DependenciesReady", gen, "10.0.0.1")
			s.UID = "other"
			return s
		}(), wantDone: true, wantCode: http.StatusServiceUnavailable},
		"ready for an older generation": {sb: ready("True", "DependenciesReady", gen-1, "10.0.0.1")},
		"suspended at an older one":     {sb: ready("False", sandboxv1beta1.SandboxReasonSuspended, gen-1)},
		"starting":                      {sb: ready("False", sandboxv1beta1.SandboxReasonDependenciesNotReady, gen)},
		"ready without a pod IP":        {sb: ready("True", "DependenciesReady", gen)},
		"ready":                         {sb: ready("True", "DependenciesReady", gen, "10.0.0.1"), wantDone: true},
		"ready at a newer generation":   {sb: ready("True", "DependenciesReady", gen+1, "10.0.0.1"), wantDone: true},
		"reconciler error":              {sb: ready("False", sandboxv1beta1.SandboxReasonReconcilerError, gen), wantDone: true, wantCode: http.StatusServiceUnavailable},
		"pod failed":                    {sb: ready("False", sandboxv1beta1.SandboxReasonPodFailed, gen), wantDone: true, wantCode: http.StatusServiceUnavailable},
		"suspended again":               {sb: ready("False", sandboxv1beta1.SandboxReasonSuspended, gen), wantDone: true, wantCode: http.StatusServiceUnavailable},
		"no Ready condition yet":        {sb: &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			done, herr := Outcome(tc.sb, "uid-1", gen)
			code := 0
			if herr != nil {
				code = herr.Code
			}
			if done != tc.wantDone || code != tc.wantCode {
				t.Errorf("wakeOutcome = %v, %v; want %v, code %d", done, herr, tc.wantDone, tc.wantCode)
			}
		})
	}
}

func TestCheckWakePolicy(t *testing.T) {
	sb := newFakeSandboxes().sb
	if herr := CheckPolicy(sb); herr != nil {
		t.Errorf("wake OnRequest (the default): %v", herr)
	}
	sb.Spec.IdlePolicy.Wake = sandboxv1beta1.WakePolicyManual
	herr := CheckPolicy(sb)
	if herr == nil || herr.Code != http.StatusServiceUnavailable || !strings.Contains(herr.Msg, "kubox resume -n ns box") ||
		!strings.Contains(herr.Msg, "Manual") {
		t.Errorf("wake Manual: %+v, want 503 naming Manual and kubox resume", herr)
	}
	sb.Spec.IdlePolicy = nil
	if herr := CheckPolicy(sb); herr == nil || !strings.Contains(herr.Msg, "no idlePolicy") {
		t.Errorf("no idle policy: %+v, want 503 saying so", herr)
	}
}
