// Package blueprint turns a SandboxTemplate into the blueprint of the Sandboxes built from it, for
// the warm-pool controller (pool members) and the claim controller (cold sandboxes) alike, and
// hashes that blueprint so a pool can tell members built from an older template.
package blueprint

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// FromTemplate returns a copy of the template's blueprint with the secure defaults applied.
func FromTemplate(tpl *extv1beta1.SandboxTemplate) sandboxv1beta1.SandboxBlueprint {
	bp := *tpl.Spec.SandboxBlueprint.DeepCopy()
	ApplySecureDefaults(&bp.PodTemplate.Spec)
	return bp
}

// ApplySecureDefaults sets what a sandbox built from a template gets unless the template says
// otherwise: no service-account token mounted (untrusted code has no business with the API
// server). Unlike agent-sandbox, kubox does not point the pod's DNS at public resolvers: the
// template's NetworkPolicy allows cluster DNS explicitly instead.
func ApplySecureDefaults(spec *corev1.PodSpec) {
	if spec.AutomountServiceAccountToken == nil {
		spec.AutomountServiceAccountToken = ptr.To(false)
	}
}

// hashed is what the staleness hash covers: the pod spec, the volume claim templates and the
// service switch. Labels and annotations of the pod template are left out, so changing them
// never replaces a pool's members.
type hashed struct {
	Spec                 corev1.PodSpec                                 `json:"spec"`
	VolumeClaimTemplates []sandboxv1beta1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`
	Service              *bool                                          `json:"service,omitempty"`
	// Egress decides the pod's proxy settings and its egress CA's domains; absent (nil), the
	// hash of a blueprint without egress is what it was before egress existed.
	Egress *sandboxv1beta1.EgressPolicy `json:"egress,omitempty"`
}

// Hash is the staleness hash of a blueprint (with secure defaults applied, as FromTemplate
// returns it): FNV-1a 32-bit of its JSON form, as 8 lowercase hex digits, for the
// agents.x-k8s.io/sandbox-template-hash label.
func Hash(bp *sandboxv1beta1.SandboxBlueprint) string {
	b, err := json.Marshal(hashed{Spec: bp.PodTemplate.Spec, VolumeClaimTemplates: bp.VolumeClaimTemplates, Service: bp.Service, Egress: bp.Egress})
	if err != nil {
		panic(fmt.Sprintf("marshalling a Kubernetes pod spec cannot fail: %v", err))
	}
	h := fnv.New32a()
	_, _ = h.Write(b) // hash.Hash never returns an error
	return fmt.Sprintf("%08x", h.Sum32())
}

// Fresh reports whether sb, a warm-pool member, has the spec a pool builds from the blueprint
// with staleness hash hash, judged by the spec itself and never by a label anyone can copy: its
// blueprint hashes to hash, and no one changed its spec since it was created (generation 1; a
// pool never changes a member's spec, binding it to a claim does). A member whose spec someone
// edited is stale, never bound, and replaced.
func Fresh(sb *sandboxv1beta1.Sandbox, hash string) bool {
	return sb.Generation == 1 && Hash(&sb.Spec.SandboxBlueprint) == hash
}
