package v1beta1

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The lifecycle rules of a Sandbox that clients wait on: is it Ready or will it never be, is its
// suspension done. They are the one home of these rules: the Go SDK, the CLI, kubox-router's
// wake and the E2B API call them, and the Python and TypeScript SDKs are tested against vectors
// generated from them (hack/vectors, sdk/testdata/contract-vectors.json).

// sandboxTerminalReasons are the reasons of Ready=False that a Sandbox does not leave by itself:
// its shutdownTime passed (it has no Pod and takes no operatingMode), or its Pod ended.
var sandboxTerminalReasons = []string{SandboxReasonExpired, SandboxReasonPodFailed, SandboxReasonPodSucceeded}

// SandboxTerminalReasons returns the reasons of Ready=False, for the sandbox's generation, that
// mean it will not become Ready by waiting. The slice is a copy.
func SandboxTerminalReasons() []string { return slices.Clone(sandboxTerminalReasons) }

// CurrentCondition returns the condition t of sb when it was computed for sb's generation, and
// nil otherwise: a condition from an older generation says nothing about the current spec.
func CurrentCondition(sb *Sandbox, t string) *metav1.Condition {
	c := meta.FindStatusCondition(sb.Status.Conditions, t)
	if c == nil || c.ObservedGeneration != sb.Generation {
		return nil
	}
	return c
}

// SandboxReadiness says whether sb is ready to use (Ready=True for its generation, with a Pod
// IP), or will never be: terminalReason is then the reason of its Ready=False (one of
// SandboxTerminalReasons). Both are zero while it is on its way.
func SandboxReadiness(sb *Sandbox) (ready bool, terminalReason string) {
	r := CurrentCondition(sb, SandboxConditionReady)
	switch {
	case r == nil:
		return false, ""
	case r.Status == metav1.ConditionTrue:
		return len(sb.Status.PodIPs) > 0, ""
	case r.Status == metav1.ConditionFalse && slices.Contains(sandboxTerminalReasons, r.Reason):
		return false, r.Reason
	}
	return false, ""
}

// SandboxSuspension says whether sb's suspension is done (Suspended=True for its generation: its
// Pod is gone), or will never be: terminalReason is SandboxReasonExpired when sb has expired,
// since an expired sandbox takes no operatingMode. Both are zero while it is suspending.
func SandboxSuspension(sb *Sandbox) (done bool, terminalReason string) {
	if r := CurrentCondition(sb, SandboxConditionReady); r != nil && r.Status == metav1.ConditionFalse &&
		r.Reason == SandboxReasonExpired {
		return false, r.Reason
	}
	s := CurrentCondition(sb, SandboxConditionSuspended)
	return s != nil && s.Status == metav1.ConditionTrue, ""
}
