package sandboxwarmpool

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestNotReadyMemberIsReplaced checks that a member not Ready within the readiness grace period
// is deleted and replaced, and that the replacement is kept once Ready.
func TestNotReadyMemberIsReplaced(t *testing.T) {
	t.Parallel()
	ns := startController(t, gracePeriod(2*time.Second, time.Minute))
	k := env.StartKubelet(t, ns)
	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.LeavePending })
	env.Create(t, testutil.MakeTemplate("tpl", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "tpl").Replicas(1).Obj())
	pool := waitForPool(t, ns, "pool", poolState{Replicas: 1, Updated: 1,
		ReadyReason: extv1beta1.WarmPoolReasonReplicasNotReady, ProgressReason: extv1beta1.WarmPoolReasonReplicasUpdating})
	// The pool's status may still count a member the grace period already took (creation times
	// are whole seconds, so a member can be "2s" old after one): take whichever member exists now.
	var stuck sandboxv1beta1.Sandbox
	framework.Eventually(t, func() (bool, string) {
		ms := members(t, ns, pool)
		if len(ms) == 0 {
			return false, "the pool has no member yet"
		}
		stuck = ms[0]
		return true, ""
	})

	// From now on Pods start, but the stuck one stays Pending: only its replacement gets Ready.
	k.SetFate(func(pod *corev1.Pod) framework.Fate {
		if pod.Name == stuck.Name {
			return framework.LeavePending
		}
		return framework.RunReady
	})
	pool = waitForPool(t, ns, "pool", full(1))
	if ms := members(t, ns, pool); slices.Contains(uids(ms), stuck.UID) {
		t.Errorf("The stuck member %s is still in the pool", stuck.Name)
	}
	env.WaitGone(t, &stuck)
	// The event names the members it replaced; when the grace period ran out for a member before
	// the one this test holds (the first may go before the pool's status shows it), the events
	// API folds the later replacement into the first event's series, under the first's note.
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", corev1.EventTypeNormal, "ReplacedNotReadyMembers", "not Ready within 2s")
	replacement := members(t, ns, pool)
	framework.Consistently(t, quiet, func() (bool, string) {
		got := uids(members(t, ns, pool))
		return slices.Equal(got, uids(replacement)), fmt.Sprintf("members %v; want the Ready replacement %v", got, uids(replacement))
	})
}

// TestPoolReadinessGracePeriodOverridesTheController checks that a pool's
// spec.readinessGracePeriodSeconds (agent-sandbox v1) wins over the controller's setting: with
// the controller's grace at 2s and the pool's at an hour, a member that never gets Ready is kept.
func TestPoolReadinessGracePeriodOverridesTheController(t *testing.T) {
	t.Parallel()
	const controllerGrace = 2 * time.Second
	ns := startController(t, gracePeriod(controllerGrace, time.Minute))
	k := env.StartKubelet(t, ns)
	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.LeavePending })
	env.Create(t, testutil.MakeTemplate("tpl", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "tpl").Replicas(1).ReadinessGracePeriodSeconds(3600).Obj())
	pool := waitForPool(t, ns, "pool", poolState{Replicas: 1, Updated: 1,
		ReadyReason: extv1beta1.WarmPoolReasonReplicasNotReady, ProgressReason: extv1beta1.WarmPoolReasonReplicasUpdating})
	stuck := uids(members(t, ns, pool))
	framework.Consistently(t, 3*controllerGrace, func() (bool, string) {
		got := uids(members(t, ns, pool))
		return slices.Equal(got, stuck), fmt.Sprintf("members %v; want the not-Ready one kept %v", got, stuck)
	})
}

// TestUnschedulableMembersAreHeld checks that members whose Pods cannot be scheduled are kept past
// the grace period rather than replaced over and over, that the pool reports them, and that it
// recovers when they are scheduled.
func TestUnschedulableMembersAreHeld(t *testing.T) {
	t.Parallel()
	const grace = 2 * time.Second
	ns := startController(t, gracePeriod(grace, time.Second))
	k := env.StartKubelet(t, ns)
	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.Unschedulable })
	env.Create(t, testutil.MakeTemplate("tpl", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "tpl").Replicas(2).Obj())

	held := poolState{Replicas: 2, Updated: 2, ReadyReason: extv1beta1.WarmPoolReasonMembersUnschedulable,
		ProgressReason: extv1beta1.WarmPoolReasonReplicasUpdating}
	waitForPool(t, ns, "pool", held)
	var pool *extv1beta1.SandboxWarmPool
	var ms []sandboxv1beta1.Sandbox
	framework.Eventually(t, func() (bool, string) {
		pool = framework.Read[extv1beta1.SandboxWarmPool](t, env, ns, "pool")
		ms = members(t, ns, pool)
		if len(ms) != 2 {
			return false, fmt.Sprintf("%d members", len(ms))
		}
		names := []string{ms[0].Name, ms[1].Name}
		slices.Sort(names)
		want := fmt.Sprintf("0 of 2 members are ready; 2 cannot be scheduled (%s, %s): %s; "+
			"the pool keeps them, rather than replacing them, until the cluster can place them", names[0], names[1], framework.UnschedulableMessage)
		c := condition(t, pool, extv1beta1.WarmPoolConditionReady)
		return c.Message == want, fmt.Sprintf("Ready message %q; want %q", c.Message, want)
	})
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", corev1.EventTypeWarning, "WarmPoolNotProgressing", framework.UnschedulableMessage)

	// Grace periods and rechecks pass: the same members stay.
	framework.Consistently(t, 2*grace, func() (bool, string) {
		got := uids(members(t, ns, pool))
		return slices.Equal(got, uids(ms)), fmt.Sprintf("members %v; want the held ones %v", got, uids(ms))
	})

	k.SetFate(func(*corev1.Pod) framework.Fate { return framework.RunReady })
	pool = waitForPool(t, ns, "pool", full(2))
	if got := uids(members(t, ns, pool)); !slices.Equal(got, uids(ms)) {
		t.Errorf("Members %v after they were scheduled; want the held ones %v", got, uids(ms))
	}
	env.WaitForEvent(t, ns, "SandboxWarmPool", "pool", corev1.EventTypeNormal, "WarmPoolProgressing", "")
}
