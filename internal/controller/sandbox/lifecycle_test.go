package sandbox

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(d))) }
	cases := map[string]struct {
		shutdownTime *metav1.Time
		wantExpired  bool
		wantUntil    time.Duration
	}{
		"no shutdownTime: never expires, no timer": {shutdownTime: nil, wantExpired: false, wantUntil: 0},
		"in 90 seconds":    {shutdownTime: at(90 * time.Second), wantExpired: false, wantUntil: 90 * time.Second},
		"in a day":         {shutdownTime: at(24 * time.Hour), wantExpired: false, wantUntil: 24 * time.Hour},
		"in half a second": {shutdownTime: at(500 * time.Millisecond), wantExpired: false, wantUntil: 500 * time.Millisecond},
		// now >= shutdownTime is expiry (inventory 2.1 step 3).
		"exactly now": {shutdownTime: at(0), wantExpired: true, wantUntil: time.Millisecond},
		// A timer is never zero or negative: that would mean "no requeue".
		"an hour ago": {shutdownTime: at(-time.Hour), wantExpired: true, wantUntil: time.Millisecond},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := testSandbox().Obj()
			sb.Spec.ShutdownTime = tc.shutdownTime
			r := &Reconciler{clock: clocktesting.NewFakePassiveClock(now)}
			if got := r.expired(sb); got != tc.wantExpired {
				t.Errorf("expired = %v, want %v", got, tc.wantExpired)
			}
			if got := r.untilExpiry(sb); got != tc.wantUntil {
				t.Errorf("untilExpiry = %v, want %v", got, tc.wantUntil)
			}
		})
	}
}

// The clock, not the wall clock, decides: stepping the fake clock past shutdownTime expires it.
func TestExpiryFollowsTheClock(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	r := &Reconciler{clock: clk}
	sb := testSandbox().ShutdownAt(start.Add(time.Minute)).Obj()

	if r.expired(sb) {
		t.Fatalf("expired at %v, a minute before shutdownTime", clk.Now())
	}
	clk.Step(59 * time.Second)
	if r.expired(sb) || r.untilExpiry(sb) != time.Second {
		t.Fatalf("at %v: expired = %v, untilExpiry = %v; want false, 1s", clk.Now(), r.expired(sb), r.untilExpiry(sb))
	}
	clk.Step(time.Second)
	if !r.expired(sb) {
		t.Errorf("not expired at shutdownTime %v", clk.Now())
	}
}

func TestRetainPVCsWhenDeleted(t *testing.T) {
	retain := sandboxv1beta1.RetainPersistentVolumeClaimRetentionPolicyType
	del := sandboxv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
	cases := map[string]struct {
		sandbox *testutil.SandboxWrapper
		want    bool
	}{
		"no policy: PVCs go with the Sandbox": {sandbox: testSandbox().VolumeClaimTemplate("data", "1Gi"), want: false},
		"whenDeleted Delete":                  {sandbox: testSandbox().VolumeClaimTemplate("data", "1Gi").PersistentVolumeClaimRetentionPolicy(del, retain), want: false},
		"whenDeleted unset (server default Delete)": {
			sandbox: testSandbox().VolumeClaimTemplate("data", "1Gi").PersistentVolumeClaimRetentionPolicy("", del), want: false,
		},
		"whenDeleted Retain":                 {sandbox: testSandbox().VolumeClaimTemplate("data", "1Gi").RetainPVCsWhenDeleted(), want: true},
		"whenDeleted Retain but no template": {sandbox: testSandbox().RetainPVCsWhenDeleted(), want: false},
		"whenExpired Delete alone":           {sandbox: testSandbox().VolumeClaimTemplate("data", "1Gi").DeletePVCsWhenExpired(), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := retainPVCsWhenDeleted(tc.sandbox.Obj()); got != tc.want {
				t.Errorf("retainPVCsWhenDeleted = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWithoutOwner(t *testing.T) {
	sb := withMeta(testSandbox().Obj())
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: types.UID("other-uid")}
	mine := controllerRef()
	cases := map[string]struct {
		refs, want []metav1.OwnerReference
	}{
		"only the sandbox":       {refs: []metav1.OwnerReference{mine}, want: []metav1.OwnerReference{}},
		"sandbox and another":    {refs: []metav1.OwnerReference{other, mine}, want: []metav1.OwnerReference{other}},
		"not owned by sandbox":   {refs: []metav1.OwnerReference{other}, want: []metav1.OwnerReference{other}},
		"no owners":              {refs: nil, want: []metav1.OwnerReference{}},
		"same name, another UID": {refs: []metav1.OwnerReference{{Kind: "Sandbox", Name: testName, UID: "older"}}, want: []metav1.OwnerReference{{Kind: "Sandbox", Name: testName, UID: "older"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withoutOwner(tc.refs, sb)); diff != "" {
				t.Errorf("withoutOwner (-want +got):\n%s", diff)
			}
		})
	}
}
