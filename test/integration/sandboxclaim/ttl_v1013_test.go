package sandboxclaim

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// agent-sandbox v1.0.13 (#2142, from its release notes): a Sandbox's Finished=True survives a
// suspend, so a claim's ttlSecondsAfterFinished counts from it across the suspend; expiry counts
// from Finished=True only, so a resumed Pod that has not finished (Finished=False/NotFinished)
// stops the count until it finishes in turn.

// finishedClaim creates a cold claim with a TTL of an hour, makes its Pod succeed, and returns the
// claim once it mirrors Finished=True.
func finishedClaim(t *testing.T, ns string) *extv1beta1.SandboxClaim {
	t.Helper()
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakeClaim("c1", ns).Template("python").TTLSecondsAfterFinished(3600).Obj())
	waitReady(t, ns, "c1")
	env.UpdatePodStatus(t, ns, "c1", framework.Succeeded)
	return waitForClaim(t, ns, "c1", func(c *extv1beta1.SandboxClaim) bool {
		return meta.IsStatusConditionTrue(c.Status.Conditions, extv1beta1.ClaimConditionFinished)
	})
}

// setOperatingMode suspends or resumes the claim's sandbox, as its user does.
func setOperatingMode(t *testing.T, ns, name string, mode sandboxv1beta1.SandboxOperatingMode) {
	t.Helper()
	framework.Update(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = mode })
}

// setTTL changes the claim's lifecycle.ttlSecondsAfterFinished.
func setTTL(t *testing.T, ns, name string, ttl int32) {
	t.Helper()
	framework.Update(t, env, &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		func(c *extv1beta1.SandboxClaim) { c.Spec.Lifecycle.TTLSecondsAfterFinished = ptr.To(ttl) })
}

// finishedOf returns the claim's Finished condition, described for a failure message.
func finishedOf(c *extv1beta1.SandboxClaim) (*metav1.Condition, string) {
	return meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionFinished), describeClaim(c)
}

// TestTTLAfterFinishedCountsAcrossSuspend: suspending a finished claim's sandbox does not stop its
// ttlSecondsAfterFinished (before v1.0.13 the suspend removed Finished, and a suspended claim never
// expired): the claim keeps Finished=True from the Pod's success, and expires while suspended.
func TestTTLAfterFinishedCountsAcrossSuspend(t *testing.T) {
	ns := startController(t)
	before, _ := finishedOf(finishedClaim(t, ns))

	setOperatingMode(t, ns, "c1", sandboxv1beta1.SandboxOperatingModeSuspended)
	framework.Eventually(t, func() (bool, string) {
		sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "c1")
		return meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended),
			fmt.Sprintf("Sandbox c1 is not suspended yet: %v", sb.Status.Conditions)
	})
	c := waitNotReady(t, ns, "c1", sandboxv1beta1.SandboxReasonSuspended)
	got, desc := finishedOf(c)
	if got == nil || got.Status != metav1.ConditionTrue || got.Reason != sandboxv1beta1.SandboxReasonPodSucceeded ||
		!got.LastTransitionTime.Equal(&before.LastTransitionTime) {
		t.Fatalf("Suspended claim's Finished = %+v; want True/PodSucceeded since %v, when its Pod succeeded (%s)",
			got, before.LastTransitionTime, desc)
	}

	t.Log("The TTL, shortened, has run out while suspended: the claim expires")
	setTTL(t, ns, "c1", 1)
	c = waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonClaimExpired)
	if got, desc := finishedOf(c); got == nil || got.Status != metav1.ConditionTrue {
		t.Errorf("Expired claim's Finished = %+v; want True kept (%s)", got, desc)
	}
	noSandboxNamed(t, ns, "c1")
}

// TestTTLAfterFinishedWaitsForTheResumedPod: resuming a finished claim's sandbox starts a Pod that
// has not finished; the claim mirrors Finished=False/NotFinished and does not expire, however long
// ago the first Pod succeeded, until the later Pod finishes; the TTL counts from then.
func TestTTLAfterFinishedWaitsForTheResumedPod(t *testing.T) {
	ns := startController(t)
	before, _ := finishedOf(finishedClaim(t, ns))

	setOperatingMode(t, ns, "c1", sandboxv1beta1.SandboxOperatingModeSuspended)
	waitNotReady(t, ns, "c1", sandboxv1beta1.SandboxReasonSuspended)
	setOperatingMode(t, ns, "c1", sandboxv1beta1.SandboxOperatingModeRunning)
	c := waitForClaim(t, ns, "c1", func(c *extv1beta1.SandboxClaim) bool {
		f, _ := finishedOf(c)
		return hasReady(metav1.ConditionTrue, "")(c) && f != nil && f.Status == metav1.ConditionFalse
	})
	if got, desc := finishedOf(c); got.Reason != sandboxv1beta1.SandboxReasonNotFinished {
		t.Errorf("Resumed claim's Finished = %+v; want False/NotFinished (%s)", got, desc)
	}

	t.Log("A TTL the first Pod's success has long outlived does not expire the claim while the later Pod runs")
	setTTL(t, ns, "c1", 1)
	waitReady(t, ns, "c1") // of the claim's new generation
	framework.Consistently(t, quiet, func() (bool, string) {
		c := framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
		return hasReady(metav1.ConditionTrue, "")(c), "the claim expired while its later Pod runs: " + describeClaim(c)
	})

	t.Log("The later Pod succeeds: Finished=True again, from a later time, and the TTL runs out")
	env.UpdatePodStatus(t, ns, "c1", framework.Succeeded)
	c = waitNotReady(t, ns, "c1", extv1beta1.ClaimReasonClaimExpired)
	got, desc := finishedOf(c)
	if got == nil || got.Status != metav1.ConditionTrue || !before.LastTransitionTime.Before(&got.LastTransitionTime) {
		t.Errorf("Expired claim's Finished = %+v; want True since after %v, the first Pod's success (%s)",
			got, before.LastTransitionTime, desc)
	}
}
