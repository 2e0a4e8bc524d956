package sandboxclaim

import (
	"encoding/json"
	"fmt"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// validateEgress checks what CEL cannot see across the claim and its template: a claim's egress
// may only narrow the template's, so the template must have egress and each of the claim's
// allowDomains must be covered by one of the template's; and a claim's credential is sent only
// to domains the sandbox may reach, so each of its domains must be covered by the sandbox's
// allowDomains (the claim's, else the template's).
func validateEgress(r *sandboxv1beta1.EgressRestriction, tpl *extv1beta1.SandboxTemplate) *failure {
	if r == nil {
		return nil
	}
	if tpl.Spec.Egress == nil {
		return fail(extv1beta1.ClaimReasonEgressRejected,
			"Claim sets spec.egress, but SandboxTemplate %s has no spec.egress to narrow, so its sandboxes' traffic does not go through kubox-egress; remove spec.egress or use a template with spec.egress", tpl.Name)
	}
	if d := sandboxv1beta1.UncoveredDomain(r.AllowDomains, tpl.Spec.Egress.AllowDomains); d != "" {
		return fail(extv1beta1.ClaimReasonEgressRejected,
			"spec.egress.allowDomains %s is not covered by SandboxTemplate %s's egress.allowDomains %v: a claim may only narrow its template's egress; allow only names among or below those",
			d, tpl.Name, tpl.Spec.Egress.AllowDomains)
	}
	allowed := tpl.Spec.Egress.AllowDomains
	if len(r.AllowDomains) > 0 {
		allowed = r.AllowDomains
	}
	for i, c := range r.Credentials {
		if d := sandboxv1beta1.UncoveredDomain(c.Domains, allowed); d != "" {
			return fail(extv1beta1.ClaimReasonEgressRejected,
				"spec.egress.credentials[%d].domains %s is not among the domains the sandbox may reach %v: a credential is sent only to allowed domains; allow it (in the template, or the claim's allowDomains) or remove it from the credential",
				i, d, allowed)
		}
	}
	return nil
}

// egressFitsWarm reports whether a warm member of tpl's pool can serve a claim with egress r: a
// member trusts an egress CA whose names are its template's credential domains (none when the
// template has no credentials), so the claim's credentials must stay within them.
func egressFitsWarm(r *sandboxv1beta1.EgressRestriction, tpl *extv1beta1.SandboxTemplate) bool {
	if r == nil || len(r.Credentials) == 0 {
		return true
	}
	if tpl.Spec.Egress == nil {
		return false
	}
	trusted := tpl.Spec.Egress.CredentialDomains()
	for _, c := range r.Credentials {
		if sandboxv1beta1.UncoveredDomain(c.Domains, trusted) != "" {
			return false
		}
	}
	return true
}

// effectiveEgress is the egress of claim's sandbox: the template's narrowed by the claim's, or
// nil when the template has none.
func effectiveEgress(claim *extv1beta1.SandboxClaim, tpl *extv1beta1.SandboxTemplate) *sandboxv1beta1.EgressPolicy {
	if tpl.Spec.Egress == nil {
		return nil
	}
	return tpl.Spec.Egress.Narrow(claim.Spec.Egress)
}

// egressFields are the JSON fields of an EgressPolicy.
var egressFields = []string{"allowDomains", "denyDomains", "allowCIDRs", "denyCIDRs", "ports", "credentials"}

// egressPatch is p as a JSON merge patch replacing a Sandbox's egress whole: a field p leaves
// out (a credential list the claim's allowDomains emptied) is null, so the member's goes.
func egressPatch(p *sandboxv1beta1.EgressPolicy) map[string]any {
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("marshalling an egress policy cannot fail: %v", err))
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("unmarshalling what json.Marshal made cannot fail: %v", err))
	}
	for _, f := range egressFields {
		if _, ok := m[f]; !ok {
			m[f] = nil
		}
	}
	return m
}
