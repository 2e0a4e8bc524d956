package sandboxclaim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

func TestValidateClaimVolumes(t *testing.T) {
	with := func(name string, mutate func(*corev1.PersistentVolumeClaimSpec)) sandboxv1beta1.PersistentVolumeClaimTemplate {
		v := testutil.MakeVolumeClaimTemplate(name, "1Gi")
		mutate(&v.Spec)
		return v
	}
	class := func(c string) func(*corev1.PersistentVolumeClaimSpec) {
		return func(s *corev1.PersistentVolumeClaimSpec) { s.StorageClassName = ptr.To(c) }
	}
	size := func(requests, limits string) func(*corev1.PersistentVolumeClaimSpec) {
		return func(s *corev1.PersistentVolumeClaimSpec) {
			s.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(requests)
			if limits != "" {
				s.Resources.Limits = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(limits)}
			}
		}
	}
	group := "snapshot.storage.k8s.io"
	// The template's own volume uses class standard.
	usesStandard := makeTemplate().VolumeClaimTemplateWith("workspace", "1Gi", class("standard"))
	cases := map[string]struct {
		template    *testutil.TemplateWrapper
		fromClaim   sandboxv1beta1.PersistentVolumeClaimTemplate
		wantMessage string // "" means valid; otherwise a substring of the VolumeClaimTemplatesError message
	}{
		"no class gets the cluster's default": {template: usesStandard, fromClaim: testutil.MakeVolumeClaimTemplate("cache", "1Gi")},
		"a class the template uses":           {template: usesStandard, fromClaim: with("cache", class("standard"))},
		"another class, with no list": {
			template: usesStandard, fromClaim: with("cache", class("premium")),
			wantMessage: `volumeClaimTemplate cache asks for StorageClass "premium", which SandboxTemplate python does not allow for claims (the classes of its own volumeClaimTemplates, as spec.claimPolicy.allowedStorageClassNames is unset: "standard")`,
		},
		"the empty class, which binds a pre-provisioned volume": {
			template: usesStandard, fromClaim: with("cache", class("")), wantMessage: `asks for StorageClass ""`,
		},
		"any class, on a template without volumes or a list": {
			template: makeTemplate(), fromClaim: with("cache", class("standard")), wantMessage: `(the classes of its own volumeClaimTemplates, as spec.claimPolicy.allowedStorageClassNames is unset: none)`,
		},
		"a listed class": {
			template:  makeTemplate().ClaimPolicy(extv1beta1.ClaimPolicy{AllowedStorageClassNames: []string{"fast", "slow"}}),
			fromClaim: with("cache", class("slow")),
		},
		"the list replaces the template's own classes": {
			template:    makeTemplate().VolumeClaimTemplateWith("workspace", "1Gi", class("standard")).ClaimPolicy(extv1beta1.ClaimPolicy{AllowedStorageClassNames: []string{"fast"}}),
			fromClaim:   with("cache", class("standard")),
			wantMessage: `(spec.claimPolicy.allowedStorageClassNames: "fast")`,
		},
		"at most maxStoragePerVolume": {
			template:  makeTemplate().ClaimPolicy(extv1beta1.ClaimPolicy{MaxStoragePerVolume: ptr.To(resource.MustParse("10Gi"))}),
			fromClaim: with("cache", size("10Gi", "10Gi")),
		},
		"more than maxStoragePerVolume requested": {
			template:    makeTemplate().ClaimPolicy(extv1beta1.ClaimPolicy{MaxStoragePerVolume: ptr.To(resource.MustParse("10Gi"))}),
			fromClaim:   with("cache", size("11Gi", "")),
			wantMessage: "asks for 11Gi of storage in spec.resources.requests, more than the 10Gi that SandboxTemplate python allows per volume (spec.claimPolicy.maxStoragePerVolume)",
		},
		"more than maxStoragePerVolume as a limit": {
			template:    makeTemplate().ClaimPolicy(extv1beta1.ClaimPolicy{MaxStoragePerVolume: ptr.To(resource.MustParse("10Gi"))}),
			fromClaim:   with("cache", size("1Gi", "1Ti")),
			wantMessage: "in spec.resources.limits",
		},
		"dataSource": {
			template: usesStandard,
			fromClaim: with("cache", func(s *corev1.PersistentVolumeClaimSpec) {
				s.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: "theirs"}
			}),
			wantMessage: "volumeClaimTemplate cache sets spec.dataSource, which a claim may not set",
		},
		"dataSourceRef": {
			template: usesStandard,
			fromClaim: with("cache", func(s *corev1.PersistentVolumeClaimSpec) {
				s.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "theirs"}
			}),
			wantMessage: "sets spec.dataSourceRef",
		},
		"volumeName": {
			template: usesStandard, fromClaim: with("cache", func(s *corev1.PersistentVolumeClaimSpec) { s.VolumeName = "pv-1" }),
			wantMessage: "sets spec.volumeName",
		},
		"selector": {
			template: usesStandard, fromClaim: with("cache", func(s *corev1.PersistentVolumeClaimSpec) { s.Selector = &metav1.LabelSelector{} }),
			wantMessage: "sets spec.selector",
		},
		"volumeAttributesClassName": {
			template: usesStandard, fromClaim: with("cache", func(s *corev1.PersistentVolumeClaimSpec) { s.VolumeAttributesClassName = ptr.To("gold") }),
			wantMessage: "sets spec.volumeAttributesClassName",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := validateClaimVolumes(vctsOf(tc.fromClaim), tc.template.Obj())
			switch {
			case tc.wantMessage == "" && f != nil:
				t.Errorf("validateClaimVolumes() = %v; want valid", f)
			case tc.wantMessage != "" && (f == nil || f.reason != extv1beta1.ClaimReasonVolumeClaimTemplatesError || !strings.Contains(f.message, tc.wantMessage)):
				t.Errorf("validateClaimVolumes() = %v; want VolumeClaimTemplatesError containing %q", f, tc.wantMessage)
			}
		})
	}
}

func vctsOf(v ...sandboxv1beta1.PersistentVolumeClaimTemplate) []sandboxv1beta1.PersistentVolumeClaimTemplate {
	return v
}
