package egress

import (
	"strings"
	"testing"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
)

func credential(header string, domains ...string) sandboxv1beta1.EgressCredential {
	return sandboxv1beta1.EgressCredential{SecretRef: sandboxv1beta1.SecretKeyReference{Name: "api-key", Key: "token"},
		Header: header, ValuePrefix: "Bearer ", Domains: domains}
}

// TestAdmission: the API server accepts well-formed egress and refuses, naming the field, each
// kind of malformed one.
func TestAdmission(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	valid := func() *sandboxv1beta1.EgressPolicy {
		return &sandboxv1beta1.EgressPolicy{
			AllowDomains: []string{"pypi.org", "*.pythonhosted.org", "api.test"},
			DenyDomains:  []string{"evil.pythonhosted.org"},
			AllowCIDRs:   []string{"203.0.113.0/24", "2001:db8::/32"},
			DenyCIDRs:    []string{"198.51.100.7/32"},
			Ports:        []int32{443, 8443},
			Credentials:  []sandboxv1beta1.EgressCredential{credential("Authorization", "api.test"), credential("x-api-key", "files.pythonhosted.org")},
		}
	}
	cases := map[string]struct {
		mutate func(*sandboxv1beta1.EgressPolicy)
		want   string // substring of the refusal; "" to accept
	}{
		"valid":                             {mutate: func(*sandboxv1beta1.EgressPolicy) {}},
		"uppercase domain":                  {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.AllowDomains = []string{"PyPI.org"} }, want: "spec.egress.allowDomains[0]"},
		"wildcard in the middle":            {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.DenyDomains = []string{"a.*.test"} }, want: "spec.egress.denyDomains[0]"},
		"bare wildcard":                     {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.AllowDomains = append(e.AllowDomains, "*") }, want: "spec.egress.allowDomains[3]"},
		"empty label":                       {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.AllowDomains = []string{"a..test"} }, want: "spec.egress.allowDomains[0]"},
		"not a CIDR":                        {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.AllowCIDRs = []string{"10.0.0.300/8"} }, want: "egress.allowCIDRs must be CIDRs"},
		"an address, not a CIDR":            {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.DenyCIDRs = []string{"10.0.0.1"} }, want: "egress.denyCIDRs must be CIDRs"},
		"port 0":                            {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Ports = []int32{0} }, want: "spec.egress.ports[0]"},
		"port beyond 65535":                 {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Ports = []int32{65536} }, want: "spec.egress.ports[0]"},
		"credential not allowed":            {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Credentials[0].Domains = []string{"other.test"} }, want: "egress.credentials[].domains must each be covered by egress.allowDomains"},
		"credential on wildcard's own name": {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Credentials[1].Domains = []string{"pythonhosted.org"} }, want: "must each be covered"},
		"credential Host header":            {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Credentials[0].Header = "Host" }, want: "must not be a hop-by-hop, framing or proxy header"},
		"credential proxy header":           {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Credentials[0].Header = "Proxy-Authorization" }, want: "must not be a hop-by-hop"},
		"header with a space":               {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Credentials[0].Header = "X Key" }, want: "spec.egress.credentials[0].header"},
		"prefix with a newline":             {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Credentials[0].ValuePrefix = "Bearer\r\nX: y" }, want: "spec.egress.credentials[0].valuePrefix"},
		"credential without domains":        {mutate: func(e *sandboxv1beta1.EgressPolicy) { e.Credentials[0].Domains = nil }, want: "spec.egress.credentials[0].domains"},
		"too many domains": {mutate: func(e *sandboxv1beta1.EgressPolicy) {
			for i := range 65 {
				e.DenyDomains = append(e.DenyDomains, strings.Repeat("a", i+1)+".test")
			}
		}, want: "spec.egress.denyDomains: Too many"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tpl := testutil.MakeTemplate(strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), "'", ""), ns).Obj()
			tpl.Spec.Egress = valid()
			tc.mutate(tpl.Spec.Egress)
			err := env.Client.Create(t.Context(), tpl)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Create refused valid egress: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Create accepted egress; want a refusal with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Create refused with %v; want %q in it", err, tc.want)
			}
		})
	}
}

// TestClaimAdmission: a claim's egress is checked for form at admission (what needs the
// template is the controller's, see TestClaimMayOnlyNarrow).
func TestClaimAdmission(t *testing.T) {
	t.Parallel()
	ns := env.NewNamespace(t)
	ok := testutil.MakeClaim("ok", ns).Template("t").Obj()
	ok.Spec.Egress = &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pypi.org"}, DenyDomains: []string{"*.evil.test"}, DenyCIDRs: []string{"192.0.2.0/24"}}
	if err := env.Client.Create(t.Context(), ok); err != nil {
		t.Fatalf("Create refused a claim narrowing egress: %v", err)
	}
	bad := testutil.MakeClaim("bad", ns).Template("t").Obj()
	bad.Spec.Egress = &sandboxv1beta1.EgressRestriction{DenyCIDRs: []string{"192.0.2.0"}}
	if err := env.Client.Create(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "egress.denyCIDRs must be CIDRs") {
		t.Fatalf("Create of a claim with a bad CIDR: %v; want the CIDR refusal", err)
	}
	withCred := testutil.MakeClaim("cred", ns).Template("t").Obj()
	withCred.Spec.Egress = &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{credential("x-api-key", "api.test")}}
	if err := env.Client.Create(t.Context(), withCred); err != nil {
		t.Fatalf("Create refused a claim adding a credential: %v", err)
	}
	uncovered := testutil.MakeClaim("uncovered", ns).Template("t").Obj()
	uncovered.Spec.Egress = &sandboxv1beta1.EgressRestriction{AllowDomains: []string{"pypi.org"},
		Credentials: []sandboxv1beta1.EgressCredential{credential("x-api-key", "api.test")}}
	if err := env.Client.Create(t.Context(), uncovered); err == nil || !strings.Contains(err.Error(), "must each be covered by the claim's egress.allowDomains") {
		t.Fatalf("Create of a claim crediting a domain its own allowDomains drop: %v; want the refusal", err)
	}
	hop := testutil.MakeClaim("hop", ns).Template("t").Obj()
	hop.Spec.Egress = &sandboxv1beta1.EgressRestriction{Credentials: []sandboxv1beta1.EgressCredential{credential("Proxy-Authorization", "api.test")}}
	if err := env.Client.Create(t.Context(), hop); err == nil || !strings.Contains(err.Error(), "must not be a hop-by-hop") {
		t.Fatalf("Create of a claim with a proxy header credential: %v; want the refusal", err)
	}
}
