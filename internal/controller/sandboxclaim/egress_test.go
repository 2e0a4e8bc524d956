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
		"a credential for an allowed name": {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{
			Credentials: []sandboxv1beta1.EgressCredential{claimCredential("files.pythonhosted.org")}}},
		"a credential for a name the template does not allow": {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{
			Credentials: []sandboxv1beta1.EgressCredential{claimCredential("evil.test")}},
			want: "credentials[0].domains evil.test is not among the domains the sandbox may reach"},
		"a credential for a name the claim's allowDomains drop": {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{
			AllowDomains: []string{"pypi.org"}, Credentials: []sandboxv1beta1.EgressCredential{claimCredential("api.test")}},
			want: "credentials[0].domains api.test is not among the domains the sandbox may reach [pypi.org]"},
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

func claimCredential(domains ...string) sandboxv1beta1.EgressCredential {
	return sandboxv1beta1.EgressCredential{SecretRef: sandboxv1beta1.SecretKeyReference{Name: "mine", Key: "k"},
		Header: "x-api-key", Domains: domains}
}

// TestEffectiveEgressAddsClaimCredentials: the claim's credentials follow the template's, so
// kubox-egress, applying them in order, gives a header both set the claim's value.
func TestEffectiveEgressAddsClaimCredentials(t *testing.T) {
	claim := &extv1beta1.SandboxClaim{}
	mine := claimCredential("api.test")
	mine.Header = "Authorization"
	claim.Spec.Egress = &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{mine}}
	tpl := egressTemplate()
	got := effectiveEgress(claim, tpl)
	if diff := cmp.Diff([]sandboxv1beta1.EgressCredential{tpl.Spec.Egress.Credentials[0], mine}, got.Credentials); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	got.Credentials[1].Domains[0] = "changed"
	if claim.Spec.Egress.Credentials[0].Domains[0] != "api.test" {
		t.Error("the effective policy shares the claim's credential")
	}
}

func TestEgressFitsWarm(t *testing.T) {
	withWildcard := func() *extv1beta1.SandboxTemplate {
		tpl := egressTemplate()
		tpl.Spec.Egress.Credentials[0].Domains = []string{"api.test", "*.pythonhosted.org"}
		return tpl
	}
	noCredentials := func() *extv1beta1.SandboxTemplate {
		tpl := egressTemplate()
		tpl.Spec.Egress.Credentials = nil
		return tpl
	}
	for name, tc := range map[string]struct {
		tpl  func() *extv1beta1.SandboxTemplate
		r    *sandboxv1beta1.EgressRestriction
		want bool
	}{
		"no egress":                         {tpl: egressTemplate, want: true},
		"no credentials":                    {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pypi.org"}}, want: true},
		"a domain the template's CA covers": {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{claimCredential("api.test")}}, want: true},
		"below the CA's wildcard":           {tpl: withWildcard, r: &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{claimCredential("files.pythonhosted.org")}}, want: true},
		"a domain outside the CA":           {tpl: egressTemplate, r: &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{claimCredential("pypi.org")}}},
		"a template with no CA":             {tpl: noCredentials, r: &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{claimCredential("api.test")}}},
	} {
		if got := egressFitsWarm(tc.r, tc.tpl()); got != tc.want {
			t.Errorf("%s: egressFitsWarm = %t, want %t", name, got, tc.want)
		}
	}
}
