package sandboxclaim

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

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

// validateClaimVolumes checks the claim's volume claim templates against what a claim may ask of
// storage: no field that picks existing data or a particular volume (spec.dataSource,
// dataSourceRef, volumeName, selector, volumeAttributesClassName; the CRD rejects them too, this
// catches claims stored before it did), a storage class the template's claimPolicy allows, and no
// more storage than its maxStoragePerVolume. It names the first offending template.
func validateClaimVolumes(fromClaim []sandboxv1beta1.PersistentVolumeClaimTemplate, tpl *extv1beta1.SandboxTemplate) *failure {
	classes, listed := allowedStorageClasses(tpl)
	for i := range fromClaim {
		name, spec := fromClaim[i].Metadata.Name, &fromClaim[i].Spec
		if field := forbiddenVolumeField(spec); field != "" {
			return fail(extv1beta1.ClaimReasonVolumeClaimTemplatesError,
				"volumeClaimTemplate %s sets spec.%s, which a claim may not set: it could give the sandbox another user's data; remove it, or move the volume into SandboxTemplate %s",
				name, field, tpl.Name)
		}
		if sc := spec.StorageClassName; sc != nil && !slices.Contains(classes, *sc) {
			source := "the classes of its own volumeClaimTemplates, as spec.claimPolicy.allowedStorageClassNames is unset"
			if listed {
				source = "spec.claimPolicy.allowedStorageClassNames"
			}
			return fail(extv1beta1.ClaimReasonVolumeClaimTemplatesError,
				"volumeClaimTemplate %s asks for StorageClass %q, which SandboxTemplate %s does not allow for claims (%s: %s); remove spec.storageClassName to get the cluster's default class, use an allowed class, or ask the template's owner to add it to spec.claimPolicy.allowedStorageClassNames",
				name, *sc, tpl.Name, source, quotedList(classes))
		}
		if cp := tpl.Spec.ClaimPolicy; cp != nil && cp.MaxStoragePerVolume != nil {
			for _, what := range []string{"requests", "limits"} {
				list := spec.Resources.Requests
				if what == "limits" {
					list = spec.Resources.Limits
				}
				if q, ok := list[corev1.ResourceStorage]; ok && q.Cmp(*cp.MaxStoragePerVolume) > 0 {
					return fail(extv1beta1.ClaimReasonVolumeClaimTemplatesError,
						"volumeClaimTemplate %s asks for %s of storage in spec.resources.%s, more than the %s that SandboxTemplate %s allows per volume (spec.claimPolicy.maxStoragePerVolume); ask for less",
						name, q.String(), what, cp.MaxStoragePerVolume.String(), tpl.Name)
				}
			}
		}
	}
	return nil
}

// forbiddenVolumeField is the first field of spec that a claim's volume claim template may not
// set, or "".
func forbiddenVolumeField(spec *corev1.PersistentVolumeClaimSpec) string {
	switch {
	case spec.DataSource != nil:
		return "dataSource"
	case spec.DataSourceRef != nil:
		return "dataSourceRef"
	case spec.VolumeName != "":
		return "volumeName"
	case spec.Selector != nil:
		return "selector"
	case spec.VolumeAttributesClassName != nil:
		return "volumeAttributesClassName"
	}
	return ""
}

// allowedStorageClasses returns the storage classes a claim of tpl may name, and whether they
// come from spec.claimPolicy.allowedStorageClassNames rather than the template's own
// volumeClaimTemplates.
func allowedStorageClasses(tpl *extv1beta1.SandboxTemplate) ([]string, bool) {
	if cp := tpl.Spec.ClaimPolicy; cp != nil && len(cp.AllowedStorageClassNames) > 0 {
		return cp.AllowedStorageClassNames, true
	}
	var classes []string
	for _, v := range tpl.Spec.VolumeClaimTemplates {
		if sc := v.Spec.StorageClassName; sc != nil && !slices.Contains(classes, *sc) {
			classes = append(classes, *sc)
		}
	}
	return classes, false
}

func quotedList(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
