package sandboxclaim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/controller/sandboxclaim"
	"github.com/kubox-dev/kubox/internal/controller/sandboxwarmpool"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestWarmClaimWrites checks the warm path's budget: the claim controller writes twice for a
// warm claim on its way to Ready (the bind and the claim's status), plus, once it is bound and
// unless turned off, the one merge patch of agent-sandbox's observability annotations; never again
// once it is Ready. The other controllers' writes it causes (the Sandbox's status and Pod labels,
// the pool's refill) are off the claim's critical path; the test logs them.
func TestWarmClaimWrites(t *testing.T) {
	for _, annotate := range []bool{true, false} {
		t.Run(fmt.Sprintf("observabilityAnnotations=%t", annotate), func(t *testing.T) {
			testWarmClaimWrites(t, annotate)
		})
	}
}

func testWarmClaimWrites(t *testing.T, annotate bool) {
	ns, log := settledPoolOfOne(t, annotate)

	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").Obj())
	claim := waitReady(t, ns, "c1")
	framework.Consistently(t, quiet, func() (bool, string) {
		return hasReady("True", "")(framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")), "claim lost Ready"
	})
	want := []string{
		"PATCH Sandbox/" + claim.Status.Sandbox.Name + " by " + sandboxclaim.FieldManager,
		"UPDATE SandboxClaim/c1/status by " + sandboxclaim.FieldManager,
	}
	if annotate {
		want = append(want, "PATCH SandboxClaim/c1 by "+sandboxclaim.FieldManager)
	}
	writes := takeUntil(t, log, want)

	var byClaimController, others []string
	for _, w := range writes {
		if strings.HasSuffix(w, " by "+sandboxclaim.FieldManager) {
			byClaimController = append(byClaimController, w)
		} else {
			others = append(others, w)
		}
	}
	if diff := cmp.Diff(want, byClaimController); diff != "" {
		t.Errorf("claim controller writes for one warm claim mismatch (-want +got):\n%s", diff)
	}
	claim = framework.Read[extv1beta1.SandboxClaim](t, env, ns, "c1")
	name, seen := claim.Annotations[extv1beta1.SandboxNameAnnotation], claim.Annotations[extv1beta1.ControllerFirstObservedAtAnnotation]
	switch {
	case annotate && name != claim.Status.Sandbox.Name:
		t.Errorf("Annotation %s = %q; want the bound sandbox %q", extv1beta1.SandboxNameAnnotation, name, claim.Status.Sandbox.Name)
	case annotate:
		if at, err := time.Parse(time.RFC3339Nano, seen); err != nil || at.Before(claim.CreationTimestamp.Add(-time.Second)) {
			t.Errorf("Annotation %s = %q (%v); want an RFC 3339 time after the claim's creation %v",
				extv1beta1.ControllerFirstObservedAtAnnotation, seen, err, claim.CreationTimestamp)
		}
	case name != "" || seen != "":
		t.Errorf("Annotations %q, %q written with observabilityAnnotations off", name, seen)
	}
	slices.Sort(others)
	t.Logf("Writes by the other controllers, off the claim's critical path (%d): %v", len(others), others)
}

// TestWarmClaimWriteBudgetWithRefill checks what one warm claim costs in API writes, its pool's
// refill included, with the optional writes off (agent-sandbox's observability annotations;
// Events are not counted here): the bind and the claim's status (the claim controller), the
// bound Pod relabelled (the Sandbox controller: it leaves the pool), the replacement Sandbox (the
// pool), its Pod and its one status write, Ready (the Sandbox controller) — six. The bind changes
// no spec, so the bound Sandbox has no new observedGeneration to write; the replacement's first
// status waits for Ready; the pool's counting status changes wait for its batch, and come back to
// what is written when the replacement is Ready within it: no pool status write then, at most two
// (the take, then Ready again) on a machine too slow for that.
func TestWarmClaimWriteBudgetWithRefill(t *testing.T) {
	ns, log := settledPoolOfOne(t, false)

	env.Create(t, testutil.MakeClaim("c1", ns).WarmPool("pool").Obj())
	bound := waitReady(t, ns, "c1").Status.Sandbox.Name
	waitForPoolReady(t, ns, "pool", 1)
	members, err := poolMembers(t, ns, "pool")
	if err != nil || len(members) != 1 {
		t.Fatalf("pool members %v (%v); want the replacement", members, err)
	}
	replacement := members[0].Name
	bySandbox, byClaim, byPool := " by "+sandbox.FieldManager, " by "+sandboxclaim.FieldManager, " by "+sandboxwarmpool.FieldManager
	want := []string{
		"CREATE Pod/" + replacement + bySandbox,
		"CREATE Sandbox/" + replacement + byPool,
		"PATCH Pod/" + bound + " by ",
		"PATCH Sandbox/" + bound + byClaim,
		"UPDATE Sandbox/" + replacement + "/status" + bySandbox,
		"UPDATE SandboxClaim/c1/status" + byClaim,
	}
	slices.Sort(want)

	// takeUntil waits quiet more, longer than the pool's status batch (1s): what it holds back
	// is written.
	var poolStatus, got []string
	for _, w := range takeUntil(t, log, want) {
		if strings.HasPrefix(w, "UPDATE SandboxWarmPool/pool/status ") {
			poolStatus = append(poolStatus, w)
		} else {
			got = append(got, w)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Writes for one warm claim and its refill, the pool's status aside (-want +got):\n%s", diff)
	}
	if len(poolStatus) > 2 {
		t.Errorf("The pool wrote its status %d times for one claim; want at most 2: %v", len(poolStatus), poolStatus)
	}
	t.Logf("Pool status writes: %d", len(poolStatus))
}

// takeUntil takes the log's writes until each of want is among them, then for quiet more, and
// returns them all. A write need not come before the waits that precede this: the bound Pod's
// relabel, say, is on no path to the claim's or the pool's Ready, and on a loaded machine it can
// come seconds after them. What comes within quiet after the last one wanted is counted too, so
// a write too many still fails the budget.
func takeUntil(t *testing.T, log *framework.WriteLog, want []string) []string {
	t.Helper()
	var got []string
	framework.Eventually(t, func() (bool, string) {
		got = append(got, log.Take()...)
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(got, w) })
		return len(missing) == 0, fmt.Sprintf("writes %v not seen yet; seen %v", missing, got)
	})
	time.Sleep(quiet)
	return append(got, log.Take()...)
}

// settledPoolOfOne starts kubox, with the claims' observability annotations on or off and its
// writes logged, on a namespace with a kubelet and a settled pool "pool" of one Ready member, and
// returns the namespace and the write log, emptied.
func settledPoolOfOne(t *testing.T, annotate bool) (string, *framework.WriteLog) {
	t.Helper()
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	log := env.NewWriteLog()
	env.StartKubox(t, ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Controllers.SandboxClaim.ObservabilityAnnotations = ptr.To(annotate)
	}, log.Counting())
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
	waitForPoolReady(t, ns, "pool", 1)
	time.Sleep(quiet) // let the pool and its member settle, then start counting
	log.Take()
	return ns, log
}
