package indexer

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
)

// Keys of the indexes the SandboxClaim controller reads its cache with.
const (
	// ReadyWarmPoolMemberKey indexes the Sandboxes a claim may bind: members of a warm pool (its
	// controller is a SandboxWarmPool and it carries the warm-pool-sandbox label) that are Ready,
	// not being deleted and whose spec no one changed since the pool created it. The value is
	// ReadyWarmPoolMemberValue(pool UID, the staleness hash of the member's spec), so a claim
	// asks for the fresh members of its pool only.
	ReadyWarmPoolMemberKey = "kubox.dev/ready-warm-pool-member"
	// ClaimWarmPoolKey indexes SandboxClaims by spec.warmPoolRef.name.
	ClaimWarmPoolKey = "spec.warmPoolRef.name"
	// ClaimTemplateKey indexes SandboxClaims by spec.sandboxTemplateRef.name.
	ClaimTemplateKey = "spec.sandboxTemplateRef.name"
)

// ReadyWarmPoolMemberValue is the ReadyWarmPoolMemberKey value of the ready members of the pool
// with UID pool that were built from the blueprint with staleness hash templateHash.
func ReadyWarmPoolMemberValue(pool types.UID, templateHash string) string {
	return string(pool) + "/" + templateHash
}

// ReadyWarmPoolMember is the index function of ReadyWarmPoolMemberKey.
func ReadyWarmPoolMember(obj client.Object) []string {
	sb, ok := obj.(*sandboxv1beta1.Sandbox)
	if !ok || sb.DeletionTimestamp != nil {
		return nil
	}
	if _, member := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]; !member {
		return nil
	}
	ref := metav1.GetControllerOf(sb)
	if ref == nil || ref.Kind != "SandboxWarmPool" || !isExtensionsGroup(ref.APIVersion) {
		return nil
	}
	if !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
		return nil
	}
	if sb.Generation != 1 {
		// Someone changed the member's spec since the pool created it: it is stale whatever
		// its hash label says (blueprint.Fresh).
		return nil
	}
	// The hash of the member's spec, not its sandbox-template-hash label, which anyone who may
	// update the Sandbox can copy.
	return []string{ReadyWarmPoolMemberValue(ref.UID, blueprint.Hash(&sb.Spec.SandboxBlueprint))}
}

// isExtensionsGroup reports whether apiVersion is a version of the extensions group, whichever:
// a pool written through another served version is a pool all the same.
func isExtensionsGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == extv1beta1.GroupVersion.Group
}

// ClaimWarmPool is the index function of ClaimWarmPoolKey.
func ClaimWarmPool(obj client.Object) []string {
	if c, ok := obj.(*extv1beta1.SandboxClaim); ok && c.Spec.WarmPoolRef != nil {
		return []string{c.Spec.WarmPoolRef.Name}
	}
	return nil
}

// ClaimTemplate is the index function of ClaimTemplateKey.
func ClaimTemplate(obj client.Object) []string {
	if c, ok := obj.(*extv1beta1.SandboxClaim); ok && c.Spec.SandboxTemplateRef != nil {
		return []string{c.Spec.SandboxTemplateRef.Name}
	}
	return nil
}

// setupSandboxClaim registers the SandboxClaim controller's indexes.
func setupSandboxClaim(ctx context.Context, fi client.FieldIndexer) error {
	for _, ix := range []struct {
		obj client.Object
		key string
		fn  client.IndexerFunc
	}{
		{&sandboxv1beta1.Sandbox{}, ReadyWarmPoolMemberKey, ReadyWarmPoolMember},
		{&extv1beta1.SandboxClaim{}, ClaimWarmPoolKey, ClaimWarmPool},
		{&extv1beta1.SandboxClaim{}, ClaimTemplateKey, ClaimTemplate},
	} {
		if err := fi.IndexField(ctx, ix.obj, ix.key, ix.fn); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.key, err)
		}
	}
	return nil
}
