package e2b

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
	"github.com/kubox-dev/kubox/internal/router/wake"
)

// TestE2BWaitLooksOnlyOnEvents: E2B's waits (pause, resume, kill) look at the cache when the
// informers say something changed, not on a timer: with no event, the check runs once; an event
// on the claim makes it look again.
func TestE2BWaitLooksOnlyOnEvents(t *testing.T) {
	a := &API{cfg: Config{WakeTimeout: 300 * time.Millisecond}, deps: Deps{Events: wake.NewEvents()}}
	var looks atomic.Int32
	check := func(context.Context) (bool, *httperr.Error) { return looks.Add(1) == 2, nil }
	timedOut := func() *httperr.Error { return httperr.Errorf(http.StatusGatewayTimeout, "timed out") }
	if herr := a.awaitE2B(context.Background(), check, timedOut, objectKey("ns", "claim")); herr == nil || herr.Code != http.StatusGatewayTimeout {
		t.Fatalf("wait = %v; want its timeout", herr)
	}
	if n := looks.Load(); n != 1 {
		t.Errorf("the check ran %d times while nothing changed in the cache; want 1 (no poll)", n)
	}
	looked := make(chan int32)
	check = func(context.Context) (bool, *httperr.Error) { n := looks.Add(1); looked <- n; return n == 2, nil }
	looks.Store(0)
	a.cfg.WakeTimeout = time.Hour
	done := make(chan *httperr.Error)
	go func() { done <- a.awaitE2B(t.Context(), check, timedOut, objectKey("ns", "claim")) }()
	<-looked
	a.deps.Events.Notify(objectKey("ns", "other")) // not the claim's: no look
	a.deps.Events.Notify(objectKey("ns", "claim"))
	if n := <-looked; n != 2 {
		t.Errorf("look %d after the claim's event; want the second", n)
	}
	if herr := <-done; herr != nil {
		t.Fatalf("wait after the claim's event = %v; want done", herr)
	}
}

// TestE2BWaitsEndOnTerminalStates: E2B's pause of an expired sandbox, and its create or resume of
// one whose Pod ended, fail at once with the reason (the API's rule, api/v1beta1 and
// api/extensions/v1beta1) instead of waiting out --wake-timeout.
func TestE2BWaitsEndOnTerminalStates(t *testing.T) {
	expired := metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionFalse,
		Reason: sandboxv1beta1.SandboxReasonExpired, Message: "Sandbox has expired", ObservedGeneration: 2}
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1", UID: "sb-uid", Generation: 2,
		OwnerReferences: []metav1.OwnerReference{{Kind: "SandboxClaim", Name: "c1", UID: "claim-uid", Controller: ptr.To(true)}}},
		Status: sandboxv1beta1.SandboxStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{expired}}}
	podFailed := metav1.Condition{Type: extv1beta1.ClaimConditionReady, Status: metav1.ConditionFalse,
		Reason: sandboxv1beta1.SandboxReasonPodFailed, Message: "Pod failed", ObservedGeneration: 1}
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1", UID: "claim-uid", Generation: 1},
		Status: extv1beta1.SandboxClaimStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{podFailed},
			Sandbox: extv1beta1.ClaimSandboxStatus{Name: "c1"}}}
	a := &API{cfg: Config{WakeTimeout: time.Hour}, deps: Deps{Events: wake.NewEvents(),
		Sandbox: func(context.Context, string, string) (*sandboxv1beta1.Sandbox, *httperr.Error) { return sb, nil },
		Claim:   func(context.Context, string, string) (*extv1beta1.SandboxClaim, *httperr.Error) { return claim, nil }}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // only turns a hang into a failure
	defer cancel()

	if herr := a.waitE2BSuspended(ctx, sb, 2); herr == nil || herr.Code == http.StatusGatewayTimeout ||
		!strings.Contains(herr.Msg, sandboxv1beta1.SandboxReasonExpired) {
		t.Errorf("pause of an expired sandbox = %v; want an error at once naming %s", herr, sandboxv1beta1.SandboxReasonExpired)
	}
	if _, herr := a.waitE2BReady(ctx, claim, 1); herr == nil || herr.Code == http.StatusGatewayTimeout ||
		!strings.Contains(herr.Msg, sandboxv1beta1.SandboxReasonPodFailed) {
		t.Errorf("create of a claim whose Pod failed = %v; want an error at once naming %s", herr, sandboxv1beta1.SandboxReasonPodFailed)
	}
}

// TestE2BSnapshotWaitWatches: the wait for a SandboxSnapshot (pause, fork, createSnapshot)
// watches the one object as the caller and reads it again when the watch reports a change, not
// on a timer; its answers stay: the snapshot once Ready, 409 with the controller's reason when
// it cannot be taken, 504 naming its condition after --wake-timeout.
func TestE2BSnapshotWaitWatches(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := extv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cond     *metav1.Condition // written once the wait watches; nil: nothing changes
		timeout  time.Duration
		wantCode int // 0: the snapshot is answered
		wantMsg  string
	}{
		"Ready": {cond: &metav1.Condition{Type: extv1beta1.SnapshotConditionReady, Status: metav1.ConditionTrue,
			Reason: extv1beta1.SnapshotReasonTaken, Message: "taken"}, timeout: time.Hour},
		"cannot be taken": {cond: &metav1.Condition{Type: extv1beta1.SnapshotConditionReady, Status: metav1.ConditionFalse,
			Reason: extv1beta1.SnapshotReasonCheckpointFailed, Message: "no kubox-node"}, timeout: time.Hour,
			wantCode: http.StatusConflict, wantMsg: "no kubox-node"},
		"never Ready": {timeout: 200 * time.Millisecond, wantCode: http.StatusGatewayTimeout, wantMsg: "no Ready condition yet"},
	} {
		t.Run(name, func(t *testing.T) {
			snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap"}}
			var gets atomic.Int32
			watching := make(chan struct{}, 1)
			kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(snap.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					gets.Add(1)
					return c.Get(ctx, key, obj, opts...)
				},
				Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
					w, err := c.Watch(ctx, list, opts...)
					watching <- struct{}{}
					return w, err
				},
			}).Build()
			a := &API{cfg: Config{WakeTimeout: tc.timeout}, kube: kube}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // only turns a hang into a failure
			defer cancel()
			type result struct {
				snap *extv1beta1.SandboxSnapshot
				herr *httperr.Error
			}
			done := make(chan result, 1)
			go func() { s, herr := a.waitE2BSnapshot(ctx, snap); done <- result{s, herr} }()
			if tc.cond != nil {
				select {
				case <-watching:
				case <-ctx.Done():
					t.Fatal("the wait never watched the SandboxSnapshot")
				}
				got := &extv1beta1.SandboxSnapshot{}
				if err := kube.Get(ctx, client.ObjectKeyFromObject(snap), got); err != nil {
					t.Fatal(err)
				}
				got.Status.Conditions = []metav1.Condition{*tc.cond}
				got.Status.Conditions[0].LastTransitionTime = metav1.Now()
				if err := kube.Update(ctx, got); err != nil {
					t.Fatal(err)
				}
			}
			res := <-done
			switch {
			case tc.wantCode == 0 && (res.herr != nil || res.snap == nil):
				t.Fatalf("wait = %v; want the Ready snapshot", res.herr)
			case tc.wantCode != 0 && (res.herr == nil || res.herr.Code != tc.wantCode || !strings.Contains(res.herr.Msg, tc.wantMsg)):
				t.Fatalf("wait = %v; want %d naming %q", res.herr, tc.wantCode, tc.wantMsg)
			}
			if n := gets.Load(); tc.cond != nil && n != 3 { // the wait's two reads and the test's own
				t.Errorf("the wait read the snapshot %d times for one change; want 2 (a read per change, no poll)", n-1)
			}
		})
	}
}
