package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// claimWith is a claim at generation gen whose status (observedGeneration observed) has a Ready
// condition (computed for observed) with status and reason, bound to sandbox ("" for none).
func claimWith(gen, observed int64, status metav1.ConditionStatus, reason, sandbox string) *SandboxClaim {
	cl := &SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: gen}}
	cl.Status.ObservedGeneration = observed
	cl.Status.Sandbox.Name = sandbox
	cl.Status.Conditions = []metav1.Condition{{Type: ClaimConditionReady, Status: status, Reason: reason, ObservedGeneration: observed}}
	return cl
}

type claimVerdict struct {
	Ready    bool
	Terminal string
}

func TestClaimReadiness(t *testing.T) {
	cases := map[string]struct {
		claim *SandboxClaim
		want  claimVerdict
	}{
		"no status yet": {&SandboxClaim{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, claimVerdict{}},
		"ready with a sandbox": {claimWith(1, 1, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "sb"),
			claimVerdict{Ready: true}},
		"ready without a sandbox name waits": {claimWith(1, 1, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, ""),
			claimVerdict{}},
		"suspended with a sandbox is ready to resume": {claimWith(1, 1, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonSuspended, "sb"),
			claimVerdict{Ready: true}},
		"suspended without a sandbox waits": {claimWith(1, 1, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonSuspended, ""),
			claimVerdict{}},
		"status for an older generation waits": {claimWith(2, 1, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "sb"),
			claimVerdict{}},
		"a terminal reason for an older generation waits": {claimWith(2, 1, metav1.ConditionFalse, ClaimReasonWarmPoolNotFound, ""),
			claimVerdict{}},
		"pool missing is terminal": {claimWith(1, 1, metav1.ConditionFalse, ClaimReasonWarmPoolNotFound, ""),
			claimVerdict{Terminal: ClaimReasonWarmPoolNotFound}},
		"an expired sandbox is terminal": {claimWith(3, 3, metav1.ConditionFalse, ClaimReasonSandboxExpired, "sb"),
			claimVerdict{Terminal: ClaimReasonSandboxExpired}},
		"a Pod that ended is terminal": {claimWith(1, 1, metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodFailed, "sb"),
			claimVerdict{Terminal: sandboxv1beta1.SandboxReasonPodFailed}},
		"settings pending waits": {claimWith(1, 1, metav1.ConditionFalse, ClaimReasonSettingsPending, "sb"),
			claimVerdict{}},
		"a terminal reason with status Unknown waits": {claimWith(1, 1, metav1.ConditionUnknown, ClaimReasonTemplateNotFound, ""),
			claimVerdict{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, terminal := ClaimReadiness(tc.claim)
			if diff := cmp.Diff(tc.want, claimVerdict{ready, terminal}); diff != "" {
				t.Errorf("ClaimReadiness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClaimTerminalReasons(t *testing.T) {
	want := []string{
		ClaimReasonWarmPoolNotFound, ClaimReasonTemplateNotFound, ClaimReasonInvalidMetadata,
		ClaimReasonEnvVarsInjectionRejected, ClaimReasonVolumeClaimTemplatesError, ClaimReasonEgressRejected,
		ClaimReasonClaimExpired, ClaimReasonSandboxExpired,
		sandboxv1beta1.SandboxReasonPodFailed, sandboxv1beta1.SandboxReasonPodSucceeded,
	}
	if diff := cmp.Diff(want, ClaimTerminalReasons()); diff != "" {
		t.Errorf("ClaimTerminalReasons (-want +got):\n%s", diff)
	}
	ClaimTerminalReasons()[0] = "Changed"
	if ClaimTerminalReasons()[0] != ClaimReasonWarmPoolNotFound {
		t.Error("changing the returned list changed ClaimTerminalReasons")
	}
}
