package sandboxclaim

import (
	"encoding/json"
	"fmt"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// validateEgress checks what CEL cannot see across the claim and its template: a claim's egress
// may only narrow the template's, so the template must have egress and each of the claim's
// allowDomains must be covered by one of the template's.
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
	return nil
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
