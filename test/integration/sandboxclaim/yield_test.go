package sandboxclaim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandboxclaim"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// yieldClaims is how many claims arrive at once in TestOptionalWritesYieldToWaitingClaims, and
// the size of the pool that serves them all warm.
const yieldClaims = 300

// TestOptionalWritesYieldToWaitingClaims holds the claim's critical path to its writes while
// yieldClaims claims arrive at once: no optional write of the claim controller (agent-sandbox's
// observability annotations, on by default) is sent while a claim still waits for its Ready
// status. The claims are created while no controller runs, against a full pool of as many Ready
// members, so all of them are waiting when the controller starts, its writes logged in the order
// it sends them. The assertion: in that log, every `PATCH SandboxClaim/<name>` of the claim
// controller (the annotations) comes after the last `UPDATE SandboxClaim/<name>/status` of the
// claim controller that any claim needed to be seen Ready. Today's code, which patches each claim
// right after its status write, sends ~yieldClaims-1 annotation patches ahead of other claims'
// status writes. The annotations must still all be written, once the claims are served. The
// pool's status writes in the same window are logged (the pool controller's, batched).
func TestOptionalWritesYieldToWaitingClaims(t *testing.T) {
	ns := env.NewNamespace(t)
	env.StartKubelet(t, ns)
	first := env.StartKuboxReplica(t, ns, nil)
	env.Create(t, testutil.MakeTemplate("python", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(yieldClaims).Obj())
	waitForPoolReady(t, ns, "pool", yieldClaims)
	first.Kill()

	names, wait := createClaims(context.Background(), ns, "pool", "c", yieldClaims, 16, 0)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	log := env.NewWriteLog()
	env.StartKuboxReplica(t, ns, nil, log.Counting())
	waitAllReady(t, ns, names)
	served := log.Take() // every write any claim needed to be seen Ready is in here

	byClaim := " by " + sandboxclaim.FieldManager
	lastReady, lastReadyWrite := -1, ""
	for i, w := range served {
		if strings.HasPrefix(w, "UPDATE SandboxClaim/") && strings.HasSuffix(w, "/status"+byClaim) {
			lastReady, lastReadyWrite = i, w
		}
	}
	var early []string
	poolStatus := 0
	for i, w := range served[:lastReady+1] {
		switch {
		case isAnnotationPatch(w, byClaim):
			early = append(early, fmt.Sprintf("#%d %s", i, w))
		case strings.HasPrefix(w, "UPDATE SandboxWarmPool/pool/status "):
			poolStatus++
		}
	}
	if len(early) > 0 {
		t.Errorf("%d optional writes (claim annotations) sent while claims still waited for their Ready status "+
			"(the last, #%d of %d, %s); want none; the first: %v",
			len(early), lastReady, len(served), lastReadyWrite, early[:min(3, len(early))])
	}
	t.Logf("%d writes until all %d claims were Ready; pool status writes among them: %d", len(served), yieldClaims, poolStatus)

	// Deferred, never dropped: every claim gets its annotations once the claims are served.
	framework.WaitFor(t, burstTimeout, func() (bool, string) {
		list := &extv1beta1.SandboxClaimList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var missing []string
		for i := range list.Items {
			c := &list.Items[i]
			if c.Annotations[extv1beta1.SandboxNameAnnotation] != c.Status.Sandbox.Name ||
				c.Annotations[extv1beta1.ControllerFirstObservedAtAnnotation] == "" {
				missing = append(missing, c.Name)
			}
		}
		return len(missing) == 0, fmt.Sprintf("%d claims without their annotations, e.g. %v", len(missing), missing[:min(3, len(missing))])
	})
	time.Sleep(quiet)
	annotations := 0
	for _, w := range append(served, log.Take()...) {
		if isAnnotationPatch(w, byClaim) {
			annotations++
		}
	}
	if annotations > yieldClaims {
		t.Errorf("%d annotation patches for %d claims; want at most one each", annotations, yieldClaims)
	}
}

// isAnnotationPatch reports whether the logged write w is a merge patch of a claim itself (not
// its status) by the claim controller: the observability annotations are its only such write.
func isAnnotationPatch(w, byClaim string) bool {
	return strings.HasPrefix(w, "PATCH SandboxClaim/") && strings.HasSuffix(w, byClaim) && !strings.Contains(w, "/status ")
}
