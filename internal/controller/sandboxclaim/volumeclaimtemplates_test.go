package sandboxclaim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func TestMergeVolumeClaimTemplates(t *testing.T) {
	vct := testutil.MakeVolumeClaimTemplate
	vcts := func(v ...sandboxv1beta1.PersistentVolumeClaimTemplate) []sandboxv1beta1.PersistentVolumeClaimTemplate {
		return v
	}
	fromTemplate := vcts(vct("workspace", "1Gi"))
	cases := map[string]struct {
		fromClaim  []sandboxv1beta1.PersistentVolumeClaimTemplate
		policy     extv1beta1.VolumeClaimTemplatesPolicy
		want       []sandboxv1beta1.PersistentVolumeClaimTemplate
		wantReason string
	}{
		"none from the claim keeps the template's": {
			policy: extv1beta1.VolumeClaimTemplatesPolicyDisallowed, want: fromTemplate,
		},
		"Disallowed rejects any": {
			fromClaim: vcts(vct("cache", "1Gi")), policy: extv1beta1.VolumeClaimTemplatesPolicyDisallowed,
			wantReason: "VolumeClaimTemplatesError",
		},
		"an unset policy is Disallowed": {
			fromClaim: vcts(vct("cache", "1Gi")), wantReason: "VolumeClaimTemplatesError",
		},
		"Allowed appends a new name": {
			fromClaim: vcts(vct("cache", "2Gi")), policy: extv1beta1.VolumeClaimTemplatesPolicyAllowed,
			want: vcts(vct("workspace", "1Gi"), vct("cache", "2Gi")),
		},
		"Allowed rejects a name the template uses": {
			fromClaim: vcts(vct("workspace", "5Gi")), policy: extv1beta1.VolumeClaimTemplatesPolicyAllowed,
			wantReason: "VolumeClaimTemplatesError",
		},
		"Overrides replaces by name and appends the rest": {
			fromClaim: vcts(vct("cache", "2Gi"), vct("workspace", "5Gi")), policy: extv1beta1.VolumeClaimTemplatesPolicyOverrides,
			want: vcts(vct("workspace", "5Gi"), vct("cache", "2Gi")),
		},
		"a template without a name is rejected": {
			fromClaim: vcts(vct("", "2Gi")), policy: extv1beta1.VolumeClaimTemplatesPolicyOverrides,
			wantReason: "VolumeClaimTemplatesError",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := vcts(vct("workspace", "1Gi"))
			got, f := mergeVolumeClaimTemplates(before, tc.fromClaim, tc.policy, "python")
			if tc.wantReason != "" {
				if f == nil || f.reason != tc.wantReason || f.message == "" {
					t.Fatalf("mergeVolumeClaimTemplates() failure = %v; want reason %s with a message", f, tc.wantReason)
				}
				return
			}
			if f != nil {
				t.Fatalf("mergeVolumeClaimTemplates() failure = %v; want none", f)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(fromTemplate, before); diff != "" {
				t.Errorf("the template's list was changed (-want +got):\n%s", diff)
			}
		})
	}
}
