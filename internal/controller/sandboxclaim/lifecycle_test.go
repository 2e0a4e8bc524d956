package sandboxclaim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

func TestExpiry(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
	finishedAt := func(status metav1.ConditionStatus, ltt time.Time) *metav1.Condition {
		return &metav1.Condition{Type: "Finished", Status: status, Reason: "PodSucceeded", LastTransitionTime: metav1.NewTime(ltt)}
	}
	// A resumed Pod that has not finished (agent-sandbox v1.0.13) stops the TTL.
	notFinishedAt := func(ltt time.Time) *metav1.Condition {
		return &metav1.Condition{Type: "Finished", Status: metav1.ConditionFalse, Reason: "NotFinished", LastTransitionTime: metav1.NewTime(ltt)}
	}
	lifecycle := func(shutdown *time.Time, ttl *int32) *extv1beta1.ClaimLifecycle {
		lc := &extv1beta1.ClaimLifecycle{TTLSecondsAfterFinished: ttl}
		if shutdown != nil {
			lc.ShutdownTime = ptr.To(metav1.NewTime(*shutdown))
		}
		return lc
	}
	cases := map[string]struct {
		lc       *extv1beta1.ClaimLifecycle
		finished *metav1.Condition
		want     *time.Time
	}{
		"no lifecycle never expires":                  {},
		"an empty lifecycle never expires":            {lc: lifecycle(nil, nil)},
		"shutdownTime alone":                          {lc: lifecycle(ptr.To(at(13, 0)), nil), want: ptr.To(at(13, 0))},
		"a TTL without a finished sandbox waits":      {lc: lifecycle(nil, ptr.To[int32](60))},
		"a TTL with Finished=False waits":             {lc: lifecycle(nil, ptr.To[int32](60)), finished: finishedAt(metav1.ConditionFalse, at(12, 0))},
		"a TTL waits for a resumed Pod":               {lc: lifecycle(nil, ptr.To[int32](60)), finished: notFinishedAt(at(12, 0))},
		"a TTL counts from the Finished transition":   {lc: lifecycle(nil, ptr.To[int32](300)), finished: finishedAt(metav1.ConditionTrue, at(12, 0)), want: ptr.To(at(12, 5))},
		"a TTL of 0 expires on finishing":             {lc: lifecycle(nil, ptr.To[int32](0)), finished: finishedAt(metav1.ConditionTrue, at(12, 0)), want: ptr.To(at(12, 0))},
		"the TTL wins when it ends first":             {lc: lifecycle(ptr.To(at(13, 0)), ptr.To[int32](60)), finished: finishedAt(metav1.ConditionTrue, at(12, 0)), want: ptr.To(at(12, 1))},
		"shutdownTime wins when it comes first":       {lc: lifecycle(ptr.To(at(12, 0)), ptr.To[int32](3600)), finished: finishedAt(metav1.ConditionTrue, at(11, 30)), want: ptr.To(at(12, 0))},
		"shutdownTime holds while the TTL cannot run": {lc: lifecycle(ptr.To(at(14, 0)), ptr.To[int32](1)), want: ptr.To(at(14, 0))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := expiry(tc.lc, tc.finished)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("expiry() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShutdownPolicy(t *testing.T) {
	cases := map[string]struct {
		lc   *extv1beta1.ClaimLifecycle
		want extv1beta1.ClaimShutdownPolicy
	}{
		"no lifecycle is Retain":   {want: extv1beta1.ClaimShutdownPolicyRetain},
		"an unset policy Retain":   {lc: &extv1beta1.ClaimLifecycle{}, want: extv1beta1.ClaimShutdownPolicyRetain},
		"Delete is kept":           {lc: &extv1beta1.ClaimLifecycle{ShutdownPolicy: "Delete"}, want: extv1beta1.ClaimShutdownPolicyDelete},
		"DeleteForeground is kept": {lc: &extv1beta1.ClaimLifecycle{ShutdownPolicy: "DeleteForeground"}, want: extv1beta1.ClaimShutdownPolicyDeleteForeground},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := shutdownPolicy(tc.lc); got != tc.want {
				t.Errorf("shutdownPolicy() = %s; want %s", got, tc.want)
			}
		})
	}
}
