package sandboxclaim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func egressTemplate() *extv1beta1.SandboxTemplate {
	tpl := &extv1beta1.SandboxTemplate{}
	tpl.Name = "tpl"
	tpl.Spec.Egress = &sandboxv1beta1.EgressPolicy{
		AllowDomains: []string{"pypi.org", "*.pythonhosted.org", "api.test"},
		DenyDomains:  []string{"bad.pythonhosted.org"},
		Credentials: []sandboxv1beta1.EgressCredential{{
			SecretRef: sandboxv1beta1.SecretKeyReference{Name: "s", Key: "k"}, Header: "Authorization", ValuePrefix: "Bearer ",
			Domains: []string{"api.test"},
		}},
	}
	return tpl
}

func TestValidateEgress(t *testing.T) {
	cases := map[string]struct {
		tpl  func() *extv1beta1.SandboxTemplate
		r    *sandboxv1beta1.EgressRestriction
		want string // substring of the message; "" for none
	}{
		"no restriction":          {tpl: egressTemplate},
		"narrower names":          {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pypi.org", "files.pythonhosted.org", "*.x.pythonhosted.org"}}},
		"extra denies only":       {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{DenyDomains: []string{"pypi.org"}, DenyCIDRs: []string{"203.0.113.0/24"}}},
		"a name not allowed":      {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pypi.org", "evil.test"}}, want: "spec.egress.allowDomains evil.test is not covered"},
		"the wildcard's own name": {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pythonhosted.org"}}, want: "pythonhosted.org is not covered"},
		"template without egress": {tpl: func() *extv1beta1.SandboxTemplate { return &extv1beta1.SandboxTemplate{} }, r: &sandboxv1beta1.EgressRestriction{}, want: "has no spec.egress"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := validateEgress(tc.r, tc.tpl())
			switch {
			case tc.want == "" && f != nil:
				t.Fatalf("validateEgress = %v, want nil", f)
			case tc.want != "" && (f == nil || f.reason != extv1beta1.ClaimReasonEgressRejected || !strings.Contains(f.message, tc.want)):
				t.Fatalf("validateEgress = %v, want EgressRejected with %q", f, tc.want)
			}
		})
	}
}

func TestEffectiveEgressNarrows(t *testing.T) {
	claim := &extv1beta1.SandboxClaim{}
	claim.Spec.Egress = &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pypi.org"}, DenyDomains: []string{"x.test"}}
	tpl := egressTemplate()
	got := effectiveEgress(claim, tpl)
	want := &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"pypi.org"}, DenyDomains: []string{"bad.pythonhosted.org", "x.test"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effectiveEgress (-want +got):\n%s", diff)
	}
	// The bind patch must remove the member's credential (no longer allowed), not merge into it.
	b, _ := json.Marshal(egressPatch(got))
	if !strings.Contains(string(b), `"credentials":null`) {
		t.Errorf("egressPatch = %s, want credentials null", b)
	}
	if len(tpl.Spec.Egress.Credentials) != 1 || len(tpl.Spec.Egress.Credentials[0].Domains) != 1 {
		t.Errorf("narrowing changed the template")
	}
}
