package sandboxclaim

import (
	"maps"
	"slices"
	"strings"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// validateAdditionalPodMetadata checks the rules of spec.additionalPodMetadata that need more
// than the claim, which admission has already checked: every label's domain (its key's prefix)
// is one of allowedDomains or a subdomain of one, and no key is one the template's pod metadata
// sets to another value. Reserved keys are rejected too, in case a claim predates the admission
// rule. Keys are checked in order, so the message names the first offender.
func validateAdditionalPodMetadata(md extv1beta1.AdditionalPodMetadata, tpl sandboxv1beta1.PodMetadata,
	allowedDomains []string, template string) *failure {
	for _, k := range slices.Sorted(maps.Keys(md.Labels)) {
		v := md.Labels[k]
		prefix, _, hasPrefix := strings.Cut(k, "/")
		switch {
		case extv1beta1.IsReservedClaimLabelKey(k):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.labels key %s is reserved (agents.x-k8s.io, kubernetes.io, k8s.io and their subdomains); use another key", k)
		case !hasPrefix || !domainAllowed(prefix, allowedDomains):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.labels key %s is not in an allowed label domain; use a key prefixed by one of [%s] (or a subdomain), or ask the administrator to allow its domain",
				k, strings.Join(allowedDomains, ", "))
		case hasOther(tpl.Labels, k, v):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.labels key %s=%s would override the value %q that SandboxTemplate %s sets; drop it or use the template's value",
				k, v, tpl.Labels[k], template)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(md.Annotations)) {
		v := md.Annotations[k]
		switch {
		case extv1beta1.IsReservedClaimAnnotationKey(k):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.annotations key %s is reserved (agents.x-k8s.io, kubernetes.io, k8s.io and their subdomains, except %s); use another key",
				k, extv1beta1.SafeToEvictAnnotation)
		case hasOther(tpl.Annotations, k, v):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.annotations key %s=%s would override the value %q that SandboxTemplate %s sets; drop it or use the template's value",
				k, v, tpl.Annotations[k], template)
		}
	}
	return nil
}

// domainAllowed reports whether prefix is one of domains or a subdomain of one.
func domainAllowed(prefix string, domains []string) bool {
	for _, d := range domains {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// hasOther reports whether m sets k to a value other than v.
func hasOther(m map[string]string, k, v string) bool {
	cur, ok := m[k]
	return ok && cur != v
}

// withAdditionalPodMetadata returns pm with the claim's labels and annotations added.
func withAdditionalPodMetadata(pm sandboxv1beta1.PodMetadata, md extv1beta1.AdditionalPodMetadata) sandboxv1beta1.PodMetadata {
	out := *pm.DeepCopy()
	if len(md.Labels) > 0 {
		out.Labels = mergeMaps(out.Labels, md.Labels)
	}
	if len(md.Annotations) > 0 {
		out.Annotations = mergeMaps(out.Annotations, md.Annotations)
	}
	return out
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}
