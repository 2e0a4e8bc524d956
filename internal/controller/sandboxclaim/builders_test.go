package sandboxclaim

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// Test fixtures of this package; the extension kinds' builders are internal/testutil's.

const (
	testNS         = "team-a"
	testClaim      = "my-claim"
	testClaimUID   = types.UID("claim-uid")
	testTemplate   = "python"
	testPool       = "python-pool"
	testGeneration = int64(4)
)

var (
	testNow     = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	testEarlier = metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))
)

// makeClaim starts a claim of pool testPool, with the metadata the API server would have set.
func makeClaim() *testutil.ClaimWrapper {
	return testutil.MakeClaim(testClaim, testNS).Meta(testClaimUID, testGeneration).WarmPool(testPool)
}

// makeTemplate starts template testTemplate whose blueprint is testutil.MakeSandbox's.
func makeTemplate() *testutil.TemplateWrapper {
	return testutil.MakeTemplate(testTemplate, testNS).Meta("template-uid", 1)
}

// sandboxWith returns a Sandbox called name with the given conditions and Pod IPs.
func sandboxWith(name string, ips []string, conds ...metav1.Condition) *sandboxv1beta1.Sandbox {
	sb := testutil.MakeSandbox(name, testNS).Obj()
	sb.Status.Conditions = conds
	sb.Status.PodIPs = ips
	return sb
}

func sbCond(typ string, status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: ltt, ObservedGeneration: 1}
}

// claimCond is a condition as computeStatus writes it: with the claim's generation.
func claimCond(typ string, status metav1.ConditionStatus, reason, msg string, ltt metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: ltt, ObservedGeneration: testGeneration}
}
