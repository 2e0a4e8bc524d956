package v1beta1

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// The "ready to use, or failed for good" rule of a SandboxClaim, which clients wait on. It is the
// rule's one home: the Go SDK and the CLI call it, and the Python and TypeScript SDKs are tested
// against vectors generated from it (hack/vectors, sdk/testdata/contract-vectors.json). What to
// do about each reason stays in each SDK, since it names the SDK's options.

// claimTerminalReasons are the reasons of a claim's Ready=False that it does not leave by itself:
// what it names does not exist, the controller refused what it asks for (until the claim or its
// template changes), it or its sandbox expired, or its sandbox's Pod ended.
var claimTerminalReasons = []string{
	ClaimReasonWarmPoolNotFound,
	ClaimReasonTemplateNotFound,
	ClaimReasonInvalidMetadata,
	ClaimReasonEnvVarsInjectionRejected,
	ClaimReasonVolumeClaimTemplatesError,
	ClaimReasonEgressRejected,
	ClaimReasonClaimExpired,
	ClaimReasonSandboxExpired,
	sandboxv1beta1.SandboxReasonPodFailed,
	sandboxv1beta1.SandboxReasonPodSucceeded,
}

// ClaimTerminalReasons returns the reasons of a claim's Ready=False, for its generation, that
// mean it will not become Ready by waiting. The slice is a copy.
func ClaimTerminalReasons() []string { return slices.Clone(claimTerminalReasons) }

// ClaimReadiness says whether claim is ready to use: Ready=True with a sandbox, or its sandbox
// suspended (Ready=False/SandboxSuspended with a sandbox), which can be resumed. terminalReason is
// the reason of its Ready=False when it failed for good (one of ClaimTerminalReasons). Only a
// status computed for the claim's generation (status.observedGeneration and the condition's)
// counts; both results are zero while the claim is on its way.
func ClaimReadiness(claim *SandboxClaim) (ready bool, terminalReason string) {
	r := meta.FindStatusCondition(claim.Status.Conditions, ClaimConditionReady)
	if r == nil || claim.Status.ObservedGeneration != claim.Generation || r.ObservedGeneration != claim.Generation {
		return false, ""
	}
	bound := claim.Status.Sandbox.Name != ""
	switch {
	case bound && r.Status == metav1.ConditionTrue:
		return true, ""
	case bound && r.Reason == sandboxv1beta1.SandboxReasonSuspended:
		return true, ""
	case r.Status == metav1.ConditionFalse && slices.Contains(claimTerminalReasons, r.Reason):
		return false, r.Reason
	}
	return false, ""
}
