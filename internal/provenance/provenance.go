// Package provenance says which objects kubox's controllers may trust as their own. Owner
// references and labels are written by whoever creates an object, so a controller never trusts
// a bare UID: a controller reference counts only with the owner's kind and API group, and the
// admission policies of config/admission keep anyone without `create` on sandboxes/provenance
// from writing the references and labels that the controllers trust (docs/templates-pools-claims.md).
package provenance

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// The kinds whose controller references the controllers follow.
var (
	Sandbox         = schema.GroupKind{Group: sandboxv1beta1.GroupVersion.Group, Kind: "Sandbox"}
	SandboxWarmPool = schema.GroupKind{Group: extv1beta1.GroupVersion.Group, Kind: "SandboxWarmPool"}
	SandboxClaim    = schema.GroupKind{Group: extv1beta1.GroupVersion.Group, Kind: "SandboxClaim"}
	SandboxTemplate = schema.GroupKind{Group: extv1beta1.GroupVersion.Group, Kind: "SandboxTemplate"}
)

// ControlledBy reports whether obj's controller reference names the object of kind gk (any
// version of its group) with uid. The UID alone is not enough: anyone may write it into a
// reference of another kind, which the admission policies do not look at.
func ControlledBy(obj metav1.Object, gk schema.GroupKind, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != uid || ref.Kind != gk.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == gk.Group
}

// ControllerKind returns the kind and group of obj's controller reference, and whether it has one.
func ControllerKind(obj metav1.Object) (schema.GroupKind, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return schema.GroupKind{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{Kind: ref.Kind}, true
	}
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, true
}

// ControllerMade reports whether sb is, or claims to be, a Sandbox that kubox's controllers made:
// a warm-pool member or a claim's sandbox, by its controller reference or its warm-pool-sandbox
// or claim-uid label. Its Pod runs the code and secrets of whoever claims it, so the Sandbox
// controller never adopts a pre-existing Pod, Service or PVC for it. Faking these marks only
// makes one's own Sandbox stricter.
func ControllerMade(sb *sandboxv1beta1.Sandbox) bool {
	if gk, ok := ControllerKind(sb); ok && (gk == SandboxWarmPool || gk == SandboxClaim) {
		return true
	}
	_, member := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]
	_, claimed := sb.Labels[sandboxv1beta1.ClaimUIDLabel]
	return member || claimed
}
