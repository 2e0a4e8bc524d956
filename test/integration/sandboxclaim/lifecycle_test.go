package sandboxclaim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// soon is a shutdownTime a few seconds ahead: the API server keeps whole seconds, and the claim
// must become Ready before it.
func soon() time.Time { return time.Now().Add(4 * time.Second) }

// startWarm starts the controller with a template and a ready pool of one.
func startWarm(t *testing.T) string {
	t.Helper()
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
	waitForPoolReady(t, ns, "pool", 1)
	return ns
}

func TestShutdownTimeRetain(t *testing.T) {
	ns := startWarm(t)
	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").ShutdownAt(soon()).Obj())
	name := waitReady(t, ns, "c1").Status.Sandbox.Name

	// Expired, the claim names its sandbox until the sandbox is gone (the controller may see it
	// gone before this read: then the name is already cleared), never another, and no IPs.
	c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonClaimExpired)
	if (c.Status.Sandbox.Name != name && c.Status.Sandbox.Name != "") || len(c.Status.Sandbox.PodIPs) != 0 {
		t.Errorf("Expired claim's sandbox status = %+v; want name %s (or none, once it is gone) and no IPs", c.Status.Sandbox, name)
	}
	framework.Eventually(t, func() (bool, string) {
		found, err := env.Get(t, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		return err == nil && !found, fmt.Sprintf("Sandbox %s still exists (err %v)", name, err)
	})
	// Once the sandbox is gone its name leaves the claim's status: a Sandbox created later
	// under that name is not the claim's.
	framework.Eventually(t, func() (bool, string) {
		c := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
		return c.Status.Sandbox.Name == "", "the expired claim still names its deleted sandbox: " + describeClaim(c)
	})
	env.WaitForEvent(t, ns, "SandboxClaim", "c1", corev1.EventTypeNormal, "ClaimExpired", "shutdownPolicy Retain")
	// The claim stays, expired, and gets no other sandbox.
	framework.Consistently(t, quiet, func() (bool, string) {
		c := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
		all, err := sandboxes(t, ns)
		owned := slices.ContainsFunc(all, func(sb sandboxv1beta1.Sandbox) bool { return metav1.IsControlledBy(&sb, c) })
		return err == nil && !owned && hasReady(metav1.ConditionFalse, extv1beta1.ClaimReasonClaimExpired)(c),
			fmt.Sprintf("%s; owns a sandbox: %t (err %v)", describeClaim(c), owned, err)
	})
}

func TestShutdownTimeDelete(t *testing.T) {
	cases := map[string]struct {
		policy extv1beta1.ClaimShutdownPolicy
		// check sees the claim after expiry; found is false when it is gone.
		check func(t *testing.T, c *extv1beta1.SandboxClaim, found bool) (bool, string)
	}{
		"Delete deletes the claim at once": {
			policy: extv1beta1.ClaimShutdownPolicyDelete,
			check: func(_ *testing.T, c *extv1beta1.SandboxClaim, found bool) (bool, string) {
				return !found, "claim still exists: " + describeClaim(c)
			},
		},
		"DeleteForeground leaves the claim until its sandbox is gone": {
			policy: extv1beta1.ClaimShutdownPolicyDeleteForeground,
			check: func(_ *testing.T, c *extv1beta1.SandboxClaim, found bool) (bool, string) {
				// No garbage collector runs here, so the claim stays deleting, waiting for it.
				return found && c.DeletionTimestamp != nil && slices.Contains(c.Finalizers, metav1.FinalizerDeleteDependents),
					fmt.Sprintf("claim found %t, deletionTimestamp %v, finalizers %v", found, c.DeletionTimestamp, c.Finalizers)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := startWarm(t)
			env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").ShutdownAt(soon()).ShutdownPolicy(tc.policy).Obj())
			claim := waitReady(t, ns, "c1")
			sbName := claim.Status.Sandbox.Name
			framework.Eventually(t, func() (bool, string) {
				c := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}}
				found, err := env.Get(t, c)
				if err != nil {
					return false, err.Error()
				}
				return tc.check(t, c, found)
			})
			// The sandbox goes with the claim: a garbage collector follows this reference.
			if ok, desc := isBoundTo(framework.Read[sandboxv1beta1.Sandbox](t, env, ns, sbName), claim); !ok {
				t.Error(desc)
			}
		})
	}
}

func TestTTLAfterFinished(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakeClaim("c1", ns).Template("python").TTLSecondsAfterFinished(1).Obj())
	waitReady(t, ns, "c1")
	framework.Consistently(t, quiet, func() (bool, string) {
		c := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
		return hasReady(metav1.ConditionTrue, "")(c), "a claim with a TTL but no finished sandbox expired: " + describeClaim(c)
	})

	env.UpdatePodStatus(t, ns, "c1", framework.Succeeded)
	waitForClaim(t, ns, "c1", func(c *extv1beta1.SandboxClaim) bool {
		return meta.IsStatusConditionTrue(c.Status.Conditions, extv1beta1.ClaimConditionFinished)
	})
	c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonClaimExpired)
	finished := meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionFinished)
	if finished == nil || finished.Status != metav1.ConditionTrue || finished.Reason != sandboxv1beta1.SandboxReasonPodSucceeded {
		t.Errorf("Finished = %+v; want True/PodSucceeded kept after expiry", finished)
	}
	framework.Eventually(t, func() (bool, string) {
		found, err := env.Get(t, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"}})
		return err == nil && !found, fmt.Sprintf("Sandbox c1 still exists (err %v)", err)
	})
}

func TestClaimExpiredBeforeItGotASandbox(t *testing.T) {
	ns := startWarm(t)
	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").ShutdownAt(time.Now().Add(-time.Minute)).Obj())
	waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonClaimExpired)
	noSandboxNamed(t, ns, "c1")
	members, err := poolMembers(t, ns, "pool")
	if err != nil || len(members) != 1 {
		t.Errorf("Pool members = %d (err %v); want the one member left alone", len(members), err)
	}
}

// TestDeletedSandboxLeavesTheClaimStatus: once a claim's sandbox is deleted, its name leaves the
// claim's status (a Sandbox created later under that name is not the claim's, and the router
// must not take it for it), and the claim stays SandboxMissing without another sandbox.
func TestDeletedSandboxLeavesTheClaimStatus(t *testing.T) {
	ns := startWarm(t)
	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").Obj())
	name := waitReady(t, ns, "c1").Status.Sandbox.Name
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Delete(t.Context(), sb); err != nil {
		t.Fatal(err)
	}
	c := waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonSandboxMissing)
	framework.Eventually(t, func() (bool, string) {
		c = framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
		return c.Status.Sandbox.Name == "" && len(c.Status.Sandbox.PodIPs) == 0, "the claim still names its deleted sandbox: " + describeClaim(c)
	})
	if cond := meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionReady); cond == nil || !strings.Contains(cond.Message, name) {
		t.Errorf("Ready = %+v; want a message naming the deleted Sandbox %s", cond, name)
	}
	framework.Consistently(t, quiet, func() (bool, string) {
		c := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
		all, err := sandboxes(t, ns)
		owned := slices.ContainsFunc(all, func(sb sandboxv1beta1.Sandbox) bool { return metav1.IsControlledBy(&sb, c) })
		return err == nil && !owned && c.Status.Sandbox.Name == "" && hasReady(metav1.ConditionFalse, extv1beta1.ClaimReasonSandboxMissing)(c),
			fmt.Sprintf("%s; owns a sandbox: %t (err %v)", describeClaim(c), owned, err)
	})
}
