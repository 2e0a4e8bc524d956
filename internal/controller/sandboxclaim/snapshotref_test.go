package sandboxclaim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestValidateSnapshotRef(t *testing.T) {
	allowed := extv1beta1.ClaimPolicy{SnapshotRefPolicy: extv1beta1.SnapshotRefPolicyAllowed}
	disallowed := extv1beta1.ClaimPolicy{SnapshotRefPolicy: extv1beta1.SnapshotRefPolicyDisallowed}
	own := testutil.MakeTemplate("own", "ns").Obj()
	own.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "base"}
	cases := map[string]struct {
		tpl        *extv1beta1.SandboxTemplate
		snapshot   string
		wantReason string
	}{
		"no snapshot":                            {tpl: testutil.MakeTemplate("t", "ns").Obj()},
		"a snapshot, no claimPolicy":             {tpl: testutil.MakeTemplate("t", "ns").Obj(), snapshot: "s", wantReason: extv1beta1.ClaimReasonSnapshotRefRejected},
		"a snapshot, Disallowed":                 {tpl: testutil.MakeTemplate("t", "ns").ClaimPolicy(disallowed).Obj(), snapshot: "s", wantReason: extv1beta1.ClaimReasonSnapshotRefRejected},
		"a snapshot, claimPolicy without policy": {tpl: testutil.MakeTemplate("t", "ns").ClaimPolicy(extv1beta1.ClaimPolicy{}).Obj(), snapshot: "s", wantReason: extv1beta1.ClaimReasonSnapshotRefRejected},
		"a snapshot, Allowed":                    {tpl: testutil.MakeTemplate("t", "ns").ClaimPolicy(allowed).Obj(), snapshot: "s"},
		"the template's own snapshot":            {tpl: own, snapshot: "base"},
		"another than the template's own":        {tpl: own, snapshot: "other", wantReason: extv1beta1.ClaimReasonSnapshotRefRejected},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ref *sandboxv1beta1.SnapshotReference
			if tc.snapshot != "" {
				ref = &sandboxv1beta1.SnapshotReference{Name: tc.snapshot}
			}
			var got string
			if f := validateSnapshotRef(ref, tc.tpl); f != nil {
				got = f.reason
			}
			if diff := cmp.Diff(tc.wantReason, got); diff != "" {
				t.Errorf("reason (-want +got):\n%s", diff)
			}
		})
	}
}
