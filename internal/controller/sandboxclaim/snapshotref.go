package sandboxclaim

import (
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// validateSnapshotRef refuses a claim whose spec.snapshotRef names a snapshot other than the one
// its template's sandboxes start from, unless the template's claimPolicy.snapshotRefPolicy is
// Allowed: a snapshot replaces what the template's Pod starts with (its processes, memory and
// files), which only the template may allow. That the claim's creator may get the snapshot is
// checked at admission (config/admission/snapshot_access.yaml); a policy cannot read the template.
func validateSnapshotRef(ref *sandboxv1beta1.SnapshotReference, tpl *extv1beta1.SandboxTemplate) *failure {
	if ref == nil || (tpl.Spec.SnapshotRef != nil && tpl.Spec.SnapshotRef.Name == ref.Name) {
		return nil
	}
	if cp := tpl.Spec.ClaimPolicy; cp != nil && cp.SnapshotRefPolicy == extv1beta1.SnapshotRefPolicyAllowed {
		return nil
	}
	return fail(extv1beta1.ClaimReasonSnapshotRefRejected,
		"spec.snapshotRef names SandboxSnapshot %s, but SandboxTemplate %s does not let claims choose the snapshot their sandbox starts from "+
			"(claimPolicy.snapshotRefPolicy is not Allowed); remove spec.snapshotRef, or ask the template's owner to set claimPolicy.snapshotRefPolicy: Allowed",
		ref.Name, tpl.Name)
}
