package indexer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// WarmPoolTemplateRefKey indexes SandboxWarmPools by spec.sandboxTemplateRef.name, so a change
// to a template finds the pools built from it.
const WarmPoolTemplateRefKey = "spec.sandboxTemplateRef.name"

// WarmPoolTemplateRef is the index function of WarmPoolTemplateRefKey.
func WarmPoolTemplateRef(obj client.Object) []string {
	pool, ok := obj.(*extv1beta1.SandboxWarmPool)
	if !ok || pool.Spec.SandboxTemplateRef.Name == "" {
		return nil
	}
	return []string{pool.Spec.SandboxTemplateRef.Name}
}

// WarmPoolOrphanKey indexes Sandboxes that have no controller by their warm-pool-sandbox label
// (the name hash of a pool), so a pool finds the orphaned members it may adopt without listing
// every Sandbox.
const WarmPoolOrphanKey = "metadata.labels.warm-pool-sandbox.orphan"

// WarmPoolOrphan is the index function of WarmPoolOrphanKey.
func WarmPoolOrphan(obj client.Object) []string {
	if metav1.GetControllerOf(obj) != nil {
		return nil
	}
	if v := obj.GetLabels()[sandboxv1beta1.WarmPoolSandboxLabel]; v != "" {
		return []string{v}
	}
	return nil
}

// setupSandboxWarmPool registers the SandboxWarmPool controller's indexes.
func setupSandboxWarmPool(ctx context.Context, fi client.FieldIndexer) error {
	if err := fi.IndexField(ctx, &extv1beta1.SandboxWarmPool{}, WarmPoolTemplateRefKey, WarmPoolTemplateRef); err != nil {
		return fmt.Errorf("indexing SandboxWarmPools by template: %w", err)
	}
	if err := fi.IndexField(ctx, &sandboxv1beta1.Sandbox{}, WarmPoolOrphanKey, WarmPoolOrphan); err != nil {
		return fmt.Errorf("indexing orphaned Sandboxes by warm pool: %w", err)
	}
	return nil
}
