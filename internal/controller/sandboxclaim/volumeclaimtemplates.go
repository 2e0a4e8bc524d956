package sandboxclaim

import (
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// mergeVolumeClaimTemplates implements spec.volumeClaimTemplates: it returns the template's volume
// claim templates with the claim's merged in as the template's volumeClaimTemplatesPolicy
// allows, or says why they may not be. Disallowed (or unset) rejects any; Allowed appends those
// whose names the template does not use; Overrides also replaces the template's by name. The
// inputs are not changed.
func mergeVolumeClaimTemplates(fromTemplate, fromClaim []sandboxv1beta1.PersistentVolumeClaimTemplate,
	policy extv1beta1.VolumeClaimTemplatesPolicy, template string) ([]sandboxv1beta1.PersistentVolumeClaimTemplate, *failure) {
	if len(fromClaim) == 0 {
		return fromTemplate, nil
	}
	if policy != extv1beta1.VolumeClaimTemplatesPolicyAllowed && policy != extv1beta1.VolumeClaimTemplatesPolicyOverrides {
		return nil, fail(extv1beta1.ClaimReasonVolumeClaimTemplatesError,
			"Claim sets volumeClaimTemplates, but SandboxTemplate %s does not allow it (volumeClaimTemplatesPolicy %s); remove them or set the template's volumeClaimTemplatesPolicy to Allowed or Overrides",
			template, orDefault(string(policy), string(extv1beta1.VolumeClaimTemplatesPolicyDisallowed)))
	}
	out := make([]sandboxv1beta1.PersistentVolumeClaimTemplate, 0, len(fromTemplate)+len(fromClaim))
	for i := range fromTemplate {
		out = append(out, *fromTemplate[i].DeepCopy())
	}
	for i := range fromClaim {
		v := fromClaim[i].DeepCopy()
		if v.Metadata.Name == "" {
			return nil, fail(extv1beta1.ClaimReasonVolumeClaimTemplatesError,
				"volumeClaimTemplates[%d] has no metadata.name; name it", i)
		}
		j := vctIndex(out, v.Metadata.Name)
		switch {
		case j >= 0 && policy == extv1beta1.VolumeClaimTemplatesPolicyAllowed:
			return nil, fail(extv1beta1.ClaimReasonVolumeClaimTemplatesError,
				"volumeClaimTemplate %s is already defined by SandboxTemplate %s, whose volumeClaimTemplatesPolicy Allowed only adds templates; rename it, or set the policy to Overrides",
				v.Metadata.Name, template)
		case j >= 0:
			out[j] = *v
		default:
			out = append(out, *v)
		}
	}
	return out, nil
}

func vctIndex(vcts []sandboxv1beta1.PersistentVolumeClaimTemplate, name string) int {
	for i := range vcts {
		if vcts[i].Metadata.Name == name {
			return i
		}
	}
	return -1
}
