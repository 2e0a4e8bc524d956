package sandboxclaim

import (
	"maps"
	"slices"
	"strings"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// metadataDomains are the domains the controller's configuration lets a claim's
// additionalPodMetadata keys have for every template (controllers.sandboxClaim.allowedLabelDomains
// and allowedAnnotationDomains); a template's spec.claimPolicy adds to them.
type metadataDomains struct {
	labels      []string
	annotations []string
}

// forTemplate returns the domains a claim of tpl may use: the controller's and the template's.
func (d metadataDomains) forTemplate(tpl *extv1beta1.SandboxTemplate) metadataDomains {
	cp := tpl.Spec.ClaimPolicy
	if cp == nil {
		return d
	}
	return metadataDomains{
		labels:      slices.Concat(d.labels, cp.AllowedLabelDomains),
		annotations: slices.Concat(d.annotations, cp.AllowedAnnotationDomains),
	}
}

// validateAdditionalPodMetadata checks the rules of spec.additionalPodMetadata that need more
// than the claim, which admission has already checked: every label's and every annotation's
// domain (its key's prefix) is one the controller or the template's claimPolicy allows, or a
// subdomain of one (the annotation cluster-autoscaler.kubernetes.io/safe-to-evict and annotations
// that are the end user's, extv1beta1.IsEndUserAnnotationKey, are always allowed), and no key is one the template's pod metadata sets to another value. Reserved keys are
// rejected too, in case a claim predates the admission rule. Keys are checked in order, so the
// message names the first offender.
func validateAdditionalPodMetadata(md extv1beta1.AdditionalPodMetadata, tpl *extv1beta1.SandboxTemplate, configured metadataDomains) *failure {
	allowed := configured.forTemplate(tpl)
	have := tpl.Spec.PodTemplate.Metadata
	for _, k := range slices.Sorted(maps.Keys(md.Labels)) {
		v := md.Labels[k]
		switch {
		case extv1beta1.IsReservedClaimLabelKey(k):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.labels key %s is reserved (agents.x-k8s.io, kubernetes.io, k8s.io and their subdomains); use another key", k)
		case !keyAllowed(k, allowed.labels):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.labels key %s is not in a label domain allowed for SandboxTemplate %s (%s); use a key under one of them (or a subdomain), or ask the template's owner to add its domain to spec.claimPolicy.allowedLabelDomains",
				k, tpl.Name, domainList(allowed.labels))
		case hasOther(have.Labels, k, v):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.labels key %s=%s would override the value %q that SandboxTemplate %s sets; drop it or use the template's value",
				k, v, have.Labels[k], tpl.Name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(md.Annotations)) {
		v := md.Annotations[k]
		switch {
		case extv1beta1.IsReservedClaimAnnotationKey(k):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.annotations key %s is reserved (agents.x-k8s.io, kubernetes.io, k8s.io and their subdomains, except %s); use another key",
				k, extv1beta1.SafeToEvictAnnotation)
		case k != extv1beta1.SafeToEvictAnnotation && !extv1beta1.IsEndUserAnnotationKey(k) && !keyAllowed(k, allowed.annotations):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.annotations key %s is not in an annotation domain allowed for SandboxTemplate %s (%s): network plugins, service meshes and container runtimes act on annotations, so a claim may only set those its template allows; use a key under an allowed domain, or ask the template's owner to add its domain to spec.claimPolicy.allowedAnnotationDomains",
				k, tpl.Name, domainList(allowed.annotations))
		case hasOther(have.Annotations, k, v):
			return fail(extv1beta1.ClaimReasonInvalidMetadata,
				"additionalPodMetadata.annotations key %s=%s would override the value %q that SandboxTemplate %s sets; drop it or use the template's value",
				k, v, have.Annotations[k], tpl.Name)
		}
	}
	return nil
}

// keyAllowed reports whether key has a prefix that is one of domains or a subdomain of one.
func keyAllowed(key string, domains []string) bool {
	prefix, _, hasPrefix := strings.Cut(key, "/")
	return hasPrefix && domainAllowed(prefix, domains)
}

// domainList describes domains in a message.
func domainList(domains []string) string {
	if len(domains) == 0 {
		return "none"
	}
	return "allowed: " + strings.Join(domains, ", ")
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
