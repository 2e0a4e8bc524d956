package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sandboxAt is a Sandbox at generation gen with conds and, when ip is set, a Pod IP.
func sandboxAt(gen int64, ip string, conds ...metav1.Condition) *Sandbox {
	sb := &Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", Generation: gen}}
	sb.Status.Conditions = conds
	if ip != "" {
		sb.Status.PodIPs = []string{ip}
	}
	return sb
}

func cond(t string, s metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, ObservedGeneration: gen}
}

type verdict struct {
	Done     bool
	Terminal string
}

func TestSandboxReadiness(t *testing.T) {
	cases := map[string]struct {
		sb   *Sandbox
		want verdict
	}{
		"no condition yet": {sandboxAt(1, ""), verdict{}},
		"ready with an IP": {sandboxAt(2, "10.0.0.1", cond(SandboxConditionReady, metav1.ConditionTrue, SandboxReasonDependenciesReady, 2)),
			verdict{Done: true}},
		"ready without an IP waits": {sandboxAt(2, "", cond(SandboxConditionReady, metav1.ConditionTrue, SandboxReasonDependenciesReady, 2)),
			verdict{}},
		"ready for an older generation waits": {sandboxAt(3, "10.0.0.1", cond(SandboxConditionReady, metav1.ConditionTrue, SandboxReasonDependenciesReady, 2)),
			verdict{}},
		"starting waits": {sandboxAt(1, "", cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonDependenciesNotReady, 1)),
			verdict{}},
		"a reconciler error waits (the controller retries)": {sandboxAt(1, "", cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonReconcilerError, 1)),
			verdict{}},
		"expired is terminal": {sandboxAt(1, "", cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonExpired, 1)),
			verdict{Terminal: SandboxReasonExpired}},
		"pod failed is terminal": {sandboxAt(1, "", cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonPodFailed, 1)),
			verdict{Terminal: SandboxReasonPodFailed}},
		"pod succeeded is terminal": {sandboxAt(1, "", cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonPodSucceeded, 1)),
			verdict{Terminal: SandboxReasonPodSucceeded}},
		"expired for an older generation waits": {sandboxAt(2, "", cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonExpired, 1)),
			verdict{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, terminal := SandboxReadiness(tc.sb)
			if diff := cmp.Diff(tc.want, verdict{ready, terminal}); diff != "" {
				t.Errorf("SandboxReadiness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSandboxSuspension(t *testing.T) {
	cases := map[string]struct {
		sb   *Sandbox
		want verdict
	}{
		"no condition yet": {sandboxAt(1, ""), verdict{}},
		"suspended, its Pod gone": {sandboxAt(2, "", cond(SandboxConditionSuspended, metav1.ConditionTrue, SandboxReasonPodTerminated, 2)),
			verdict{Done: true}},
		"the Pod terminating waits": {sandboxAt(2, "", cond(SandboxConditionSuspended, metav1.ConditionFalse, SandboxReasonPodTerminating, 2)),
			verdict{}},
		"suspended for an older generation waits": {sandboxAt(3, "", cond(SandboxConditionSuspended, metav1.ConditionTrue, SandboxReasonPodTerminated, 2)),
			verdict{}},
		"an expired sandbox is never suspended": {sandboxAt(2, "",
			cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonExpired, 2),
			cond(SandboxConditionSuspended, metav1.ConditionFalse, SandboxReasonNotSuspended, 2)),
			verdict{Terminal: SandboxReasonExpired}},
		"expired wins over a Suspended=True": {sandboxAt(2, "",
			cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonExpired, 2),
			cond(SandboxConditionSuspended, metav1.ConditionTrue, SandboxReasonPodTerminated, 2)),
			verdict{Terminal: SandboxReasonExpired}},
		"a Pod that ended does not stop a suspension": {sandboxAt(2, "",
			cond(SandboxConditionReady, metav1.ConditionFalse, SandboxReasonPodFailed, 2),
			cond(SandboxConditionSuspended, metav1.ConditionTrue, SandboxReasonPodTerminated, 2)),
			verdict{Done: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			done, terminal := SandboxSuspension(tc.sb)
			if diff := cmp.Diff(tc.want, verdict{done, terminal}); diff != "" {
				t.Errorf("SandboxSuspension (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSandboxTerminalReasonsAreReadyReasons(t *testing.T) {
	want := []string{SandboxReasonExpired, SandboxReasonPodFailed, SandboxReasonPodSucceeded}
	if diff := cmp.Diff(want, SandboxTerminalReasons()); diff != "" {
		t.Errorf("SandboxTerminalReasons (-want +got):\n%s", diff)
	}
	// The list is a copy: a caller cannot change the rule.
	SandboxTerminalReasons()[0] = "Changed"
	if SandboxTerminalReasons()[0] != SandboxReasonExpired {
		t.Error("changing the returned list changed SandboxTerminalReasons")
	}
}
