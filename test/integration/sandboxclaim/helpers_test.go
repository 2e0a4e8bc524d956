package sandboxclaim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// quiet is how long a test watches for something that must not happen. A short window makes such
// a check weaker, never flaky.
const quiet = 2 * time.Second

// burstTimeout bounds the races' waits, which move hundreds of objects on a shared machine.
const burstTimeout = 4 * time.Minute

// startController creates a namespace for t, starts the kubelet stand-in in it, and starts every
// kubox reconciler watching it, set up as kubox-controller sets them up.
func startController(t *testing.T) string {
	t.Helper()
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	env.StartKubox(t, ns, nil)
	return ns
}

// describeClaim summarizes a claim's status for failure messages.
func describeClaim(c *extv1beta1.SandboxClaim) string {
	var b strings.Builder
	fmt.Fprintf(&b, "claim %s generation %d, status{observedGeneration %d, sandbox %q, podIPs %v, conditions [",
		c.Name, c.Generation, c.Status.ObservedGeneration, c.Status.Sandbox.Name, c.Status.Sandbox.PodIPs)
	for _, cond := range c.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s/%s %q (gen %d)", cond.Type, cond.Status, cond.Reason, cond.Message, cond.ObservedGeneration)
	}
	b.WriteString(" ]}")
	return b.String()
}

// waitForClaim waits until ok accepts the stored claim and returns it.
func waitForClaim(t *testing.T, ns, name string, ok func(*extv1beta1.SandboxClaim) bool) *extv1beta1.SandboxClaim {
	t.Helper()
	c := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	framework.Eventually(t, func() (bool, string) {
		found, err := env.Get(t, c)
		switch {
		case err != nil:
			return false, err.Error()
		case !found:
			return false, "claim " + name + " does not exist"
		}
		return ok(c), describeClaim(c)
	})
	return c
}

// readyCondition returns the claim's Ready condition, or nil.
func readyCondition(c *extv1beta1.SandboxClaim) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionReady)
}

// hasReady reports whether the claim's Ready condition, of the claim's generation, has status
// and reason (any reason when reason is empty).
func hasReady(status metav1.ConditionStatus, reason string) func(*extv1beta1.SandboxClaim) bool {
	return func(c *extv1beta1.SandboxClaim) bool {
		r := readyCondition(c)
		return r != nil && r.Status == status && (reason == "" || r.Reason == reason) &&
			r.ObservedGeneration == c.Generation && c.Status.ObservedGeneration == c.Generation
	}
}

// waitReady waits until the claim is Ready and returns it.
func waitReady(t *testing.T, ns, name string) *extv1beta1.SandboxClaim {
	t.Helper()
	return waitForClaim(t, ns, name, hasReady(metav1.ConditionTrue, ""))
}

// waitNotReady waits until the claim is Ready=False with reason and returns it.
func waitNotReady(t *testing.T, ns, name, reason string) *extv1beta1.SandboxClaim {
	t.Helper()
	return waitForClaim(t, ns, name, hasReady(metav1.ConditionFalse, reason))
}

// waitForPoolReady waits until the pool has n ready members.
func waitForPoolReady(t *testing.T, ns, pool string, n int) {
	t.Helper()
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		members, err := poolMembers(t, ns, pool)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, sb := range members {
			if meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
				ready++
			}
		}
		return ready == n && len(members) == n, fmt.Sprintf("pool %s has %d members, %d ready; want %d ready", pool, len(members), ready, n)
	})
}

// sandboxes lists the Sandboxes of ns.
func sandboxes(t *testing.T, ns string) ([]sandboxv1beta1.Sandbox, error) {
	t.Helper()
	list := &sandboxv1beta1.SandboxList{}
	err := env.Client.List(t.Context(), list, client.InNamespace(ns))
	return list.Items, err
}

// poolMembers lists the Sandboxes the pool controls.
func poolMembers(t *testing.T, ns, pool string) ([]sandboxv1beta1.Sandbox, error) {
	t.Helper()
	all, err := sandboxes(t, ns)
	var out []sandboxv1beta1.Sandbox
	for _, sb := range all {
		if ref := metav1.GetControllerOf(&sb); ref != nil && ref.Kind == "SandboxWarmPool" && ref.Name == pool {
			out = append(out, sb)
		}
	}
	return out, err
}

// isBoundTo reports whether sb is bound to claim: controlled by it, with the reference a garbage
// collector follows, and nothing else, and labelled with its UID.
func isBoundTo(sb *sandboxv1beta1.Sandbox, claim *extv1beta1.SandboxClaim) (bool, string) {
	refs := sb.OwnerReferences
	ok := len(refs) == 1 && refs[0].UID == claim.UID && refs[0].Kind == "SandboxClaim" &&
		refs[0].APIVersion == extv1beta1.GroupVersion.String() && refs[0].Name == claim.Name &&
		ptr.Deref(refs[0].Controller, false) && ptr.Deref(refs[0].BlockOwnerDeletion, false) &&
		sb.Labels[sandboxv1beta1.ClaimUIDLabel] == string(claim.UID)
	return ok, fmt.Sprintf("Sandbox %s: owner references %+v, claim-uid label %q; want only SandboxClaim %s (uid %s) as controller",
		sb.Name, refs, sb.Labels[sandboxv1beta1.ClaimUIDLabel], claim.Name, claim.UID)
}

// noSandboxNamed checks, for quiet, that no Sandbox called name appears.
func noSandboxNamed(t *testing.T, ns, name string) {
	t.Helper()
	framework.Consistently(t, quiet, func() (bool, string) {
		found, err := env.Get(t, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		if err != nil {
			return false, err.Error()
		}
		return !found, "Sandbox " + name + " exists"
	})
}
