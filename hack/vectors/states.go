package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// StateVector is one object and what a lifecycle rule says of it: "ready" (or "done"), "terminal"
// with the reason, or "waiting".
type StateVector struct {
	Name   string         `json:"name"`
	Object map[string]any `json:"object"`
	Want   string         `json:"want"`
	Reason string         `json:"reason,omitempty"`
}

func verdict(ok bool, okWord, reason string) (string, string) {
	switch {
	case reason != "":
		return "terminal", reason
	case ok:
		return okWord, ""
	}
	return "waiting", ""
}

// sandboxReadyReasons are the reasons a Sandbox's Ready condition has (and a claim mirrors).
var sandboxReadyReasons = []string{
	sandboxv1beta1.SandboxReasonDependenciesReady, sandboxv1beta1.SandboxReasonDependenciesNotReady,
	sandboxv1beta1.SandboxReasonSuspended, sandboxv1beta1.SandboxReasonPodSucceeded, sandboxv1beta1.SandboxReasonPodFailed,
	sandboxv1beta1.SandboxReasonExpired, sandboxv1beta1.SandboxReasonMultiplePods, sandboxv1beta1.SandboxReasonReconcilerError,
	sandboxv1beta1.SandboxReasonInvalidConfiguration, sandboxv1beta1.SandboxReasonSnapshotNotReady,
}

// claimReadyReasons are the reasons of a claim's own Ready condition.
var claimReadyReasons = []string{
	extv1beta1.ClaimReasonTemplateNotFound, extv1beta1.ClaimReasonWarmPoolNotFound, extv1beta1.ClaimReasonAdoptionConflict,
	extv1beta1.ClaimReasonSandboxCreatePending, extv1beta1.ClaimReasonInvalidMetadata, extv1beta1.ClaimReasonEnvVarsInjectionRejected,
	extv1beta1.ClaimReasonVolumeClaimTemplatesError, extv1beta1.ClaimReasonSecretFilesRejected, extv1beta1.ClaimReasonSnapshotRefRejected,
	extv1beta1.ClaimReasonEgressRejected, extv1beta1.ClaimReasonSettingsPending, extv1beta1.ClaimReasonClaimExpired,
	extv1beta1.ClaimReasonSandboxExpired, extv1beta1.ClaimReasonSandboxMissing, extv1beta1.ClaimReasonSandboxNotReady,
	extv1beta1.ClaimReasonReconcilerError,
}

// claimAt is a claim from pool "python" at generation gen; with a Ready condition of status and
// reason computed for observed (status "" for none), bound to sandbox ("" for none).
func claimAt(gen, observed int64, status metav1.ConditionStatus, reason, sandbox string) *extv1beta1.SandboxClaim {
	cl := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "c1", Generation: gen}}
	cl.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: "python"}
	cl.Status.ObservedGeneration = observed
	cl.Status.Sandbox.Name = sandbox
	if status != "" {
		cl.Status.Conditions = []metav1.Condition{{Type: extv1beta1.ClaimConditionReady, Status: status, Reason: reason,
			Message: "the controller's message", ObservedGeneration: observed}}
	}
	return cl
}

func claimReadinessVectors() []StateVector {
	type tc struct {
		name  string
		claim *extv1beta1.SandboxClaim
	}
	cases := []tc{
		{"no status yet", claimAt(1, 0, "", "", "")},
		{"True, bound", claimAt(2, 2, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "sb")},
		{"True, not bound", claimAt(2, 2, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "")},
		{"True, bound, status of an older generation", claimAt(3, 2, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "sb")},
		{"False/WarmPoolNotFound of an older generation", claimAt(3, 2, metav1.ConditionFalse, extv1beta1.ClaimReasonWarmPoolNotFound, "")},
		{"Unknown/TemplateNotFound", claimAt(1, 1, metav1.ConditionUnknown, extv1beta1.ClaimReasonTemplateNotFound, "")},
	}
	stale := claimAt(2, 2, metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady, "sb")
	stale.Status.Conditions[0].ObservedGeneration = 1
	cases = append(cases, tc{"True, bound, condition of an older generation", stale})
	for _, reason := range append(append([]string{}, claimReadyReasons...), sandboxReadyReasons...) {
		for _, sandbox := range []string{"sb", ""} {
			bound := map[bool]string{true: "bound", false: "not bound"}[sandbox != ""]
			cases = append(cases, tc{fmt.Sprintf("False/%s, %s", reason, bound), claimAt(1, 1, metav1.ConditionFalse, reason, sandbox)})
		}
	}
	out := make([]StateVector, 0, len(cases))
	for _, c := range cases {
		ready, terminal := extv1beta1.ClaimReadiness(c.claim)
		want, reason := verdict(ready, "ready", terminal)
		out = append(out, StateVector{Name: c.name, Object: jsonObject(c.claim), Want: want, Reason: reason})
	}
	return dedupe(out)
}

// sandboxAt is a Sandbox at generation gen with conds (each computed for observed) and, when ip
// is set, a Pod IP.
func sandboxAt(gen, observed int64, ip string, conds ...metav1.Condition) *sandboxv1beta1.Sandbox {
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sb", Generation: gen}}
	for _, c := range conds {
		c.ObservedGeneration, c.Message = observed, "the controller's message"
		sb.Status.Conditions = append(sb.Status.Conditions, c)
	}
	if ip != "" {
		sb.Status.PodIPs = []string{ip}
	}
	return sb
}

func ready(status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: status, Reason: reason}
}

func suspended(status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: sandboxv1beta1.SandboxConditionSuspended, Status: status, Reason: reason}
}

type sandboxCase struct {
	name string
	sb   *sandboxv1beta1.Sandbox
}

func sandboxReadinessVectors() []StateVector {
	cases := []sandboxCase{
		{"no condition yet", sandboxAt(1, 1, "")},
		{"True with a Pod IP", sandboxAt(2, 2, "10.0.0.7", ready(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady))},
		{"True without a Pod IP", sandboxAt(2, 2, "", ready(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady))},
		{"True of an older generation", sandboxAt(3, 2, "10.0.0.7", ready(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady))},
		{"False/SandboxExpired of an older generation", sandboxAt(3, 2, "", ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired))},
		{"Unknown/PodFailed", sandboxAt(1, 1, "", ready(metav1.ConditionUnknown, sandboxv1beta1.SandboxReasonPodFailed))},
	}
	for _, reason := range sandboxReadyReasons {
		cases = append(cases, sandboxCase{"False/" + reason, sandboxAt(1, 1, "", ready(metav1.ConditionFalse, reason))})
	}
	out := make([]StateVector, 0, len(cases))
	for _, c := range cases {
		ok, terminal := sandboxv1beta1.SandboxReadiness(c.sb)
		want, reason := verdict(ok, "ready", terminal)
		out = append(out, StateVector{Name: c.name, Object: jsonObject(c.sb), Want: want, Reason: reason})
	}
	return out
}

func sandboxSuspensionVectors() []StateVector {
	running := ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonSuspended)
	cases := []sandboxCase{
		{"no condition yet", sandboxAt(1, 1, "")},
		{"True/PodTerminated", sandboxAt(2, 2, "", running, suspended(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated))},
		{"True/PodTerminated of an older generation", sandboxAt(3, 2, "", running, suspended(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated))},
		{"expired", sandboxAt(2, 2, "", ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired),
			suspended(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotSuspended))},
		{"expired, Suspended=True", sandboxAt(2, 2, "", ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired),
			suspended(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated))},
		{"expired of an older generation", sandboxAt(3, 2, "", ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonExpired))},
		{"its Pod failed, Suspended=True", sandboxAt(2, 2, "", ready(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodFailed),
			suspended(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated))},
	}
	for _, reason := range []string{sandboxv1beta1.SandboxReasonNotSuspended, sandboxv1beta1.SandboxReasonPodTerminating,
		sandboxv1beta1.SandboxReasonPodNotOwned, sandboxv1beta1.SandboxReasonPodStateUnknown} {
		cases = append(cases, sandboxCase{"False/" + reason, sandboxAt(2, 2, "10.0.0.7",
			ready(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonDependenciesReady), suspended(metav1.ConditionFalse, reason))})
	}
	out := make([]StateVector, 0, len(cases))
	for _, c := range cases {
		done, terminal := sandboxv1beta1.SandboxSuspension(c.sb)
		want, reason := verdict(done, "done", terminal)
		out = append(out, StateVector{Name: c.name, Object: jsonObject(c.sb), Want: want, Reason: reason})
	}
	return out
}

// dedupe drops the vectors whose name an earlier one has (reasons that two lists share).
func dedupe(in []StateVector) []StateVector {
	seen := map[string]bool{}
	out := in[:0]
	for _, v := range in {
		if !seen[v.Name] {
			seen[v.Name] = true
			out = append(out, v)
		}
	}
	return out
}
