package sandboxwarmpool

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// schedulerPause is how long the test leaves a bound Pod Pending before it starts it, so the
// Sandbox controller sees the scheduled, not yet running Pod, as it does in a cluster. A shorter
// pause makes the check weaker, never flaky; it is well within the controller's progress delay
// (5 s from the member's creation), after which the first status is written and the budget would
// be exceeded.
const schedulerPause = 500 * time.Millisecond

// TestMemberWriteBudget checks the Sandbox controller's write budget for one new pool member, from
// its creation to Ready, as a scheduler and kubelet move its Pod (created Pending, then bound,
// then Running and Ready with an IP, as kwok does): the Pod and one status write, Ready. The pool
// names the member itself, so the pod-name annotation comes with the member's creation, and the
// first status of an unclaimed member whose Pod merely starts waits (up to the controller's
// progress delay) for the next change: nothing is written while the Pod is Pending or bound,
// what a client reads on the way (no status yet) is never wrong, and at the end it is all there.
// The pool's own writes are logged.
func TestMemberWriteBudget(t *testing.T) {
	log := env.NewWriteLog()
	ns := startController(t, nil, log.Counting())
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	pool := testutil.MakePool("pool", ns, "python").Replicas(1).Obj()
	env.Create(t, pool)

	var name string
	framework.Eventually(t, func() (bool, string) {
		ms := members(t, ns, pool)
		if len(ms) != 1 {
			return false, fmt.Sprintf("%d members; want 1", len(ms))
		}
		name = ms[0].Name
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{})
		return err == nil, fmt.Sprintf("reading the member's Pod: %v", err)
	})
	notRunning := func(sb *sandboxv1beta1.Sandbox) string {
		switch {
		case sb.Annotations[sandboxv1beta1.PodNameAnnotation] != name:
			return fmt.Sprintf("annotations %v; want %s=%s from the creation", sb.Annotations, sandboxv1beta1.PodNameAnnotation, name)
		case len(sb.Status.Conditions) != 0 || len(sb.Status.PodIPs) != 0:
			return fmt.Sprintf("status %+v; want none yet", sb.Status)
		}
		return ""
	}
	if msg := notRunning(framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)); msg != "" {
		t.Errorf("New member: %s", msg)
	}

	env.BindPod(t, ns, name, "node-a")
	time.Sleep(schedulerPause)
	if msg := notRunning(framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)); msg != "" {
		t.Errorf("Member with a bound Pending Pod: %s", msg)
	}
	env.UpdatePodStatus(t, ns, name, framework.RunningAndReady("10.0.0.7"))
	waitForPool(t, ns, pool.Name, full(1))
	framework.Consistently(t, quiet, func() (bool, string) {
		return isReady(framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)), "member lost Ready"
	})
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, name)
	sched := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionPodScheduled)
	if sched == nil || sched.Status != metav1.ConditionTrue || sb.Status.NodeName != "node-a" ||
		!slices.Equal(sb.Status.PodIPs, []string{"10.0.0.7"}) || sb.Annotations[sandboxv1beta1.PodNameAnnotation] != name {
		t.Errorf("Ready member: PodScheduled %+v, nodeName %q, podIPs %v, annotations %v; want True, node-a, [10.0.0.7] and %s=%s",
			sched, sb.Status.NodeName, sb.Status.PodIPs, sb.Annotations, sandboxv1beta1.PodNameAnnotation, name)
	}

	// The writes about the member's objects, but for its creation by the pool.
	var member, others []string
	for _, w := range log.Take() {
		about := strings.Contains(w, " Sandbox/"+name+" ") || strings.Contains(w, " Sandbox/"+name+"/") ||
			strings.Contains(w, " Pod/"+name+" ")
		if about && !strings.HasPrefix(w, "CREATE Sandbox/") {
			member = append(member, w)
		} else {
			others = append(others, w)
		}
	}
	slices.Sort(member)
	by := " by " + sandbox.FieldManager
	want := []string{
		"CREATE Pod/" + name + by,
		"UPDATE Sandbox/" + name + "/status" + by,
	}
	if diff := cmp.Diff(want, member); diff != "" {
		t.Errorf("Sandbox controller writes for one pool member on its way to Ready (-want +got):\n%s", diff)
	}
	slices.Sort(others)
	t.Logf("Writes by the other controllers (%d): %v", len(others), others)
}
