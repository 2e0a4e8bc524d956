package indexer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
)

// RestoreImageKey indexes Pods by the snapshot image they restore from (the annotation
// contract.RestoreImageAnnotation), so the SandboxSnapshot controller finds the Pods restored from
// a snapshot, and the nodes holding a copy of it, without listing every Pod.
const RestoreImageKey = "metadata.annotations.restore-image"

// RestoreImage is the index function of RestoreImageKey.
func RestoreImage(obj client.Object) []string {
	if v := obj.GetAnnotations()[contract.RestoreImageAnnotation]; v != "" {
		return []string{v}
	}
	return nil
}

// setupSandboxSnapshot registers the SandboxSnapshot controller's indexes.
func setupSandboxSnapshot(ctx context.Context, fi client.FieldIndexer) error {
	if err := fi.IndexField(ctx, &corev1.Pod{}, RestoreImageKey, RestoreImage); err != nil {
		return fmt.Errorf("indexing Pods by the snapshot image they restore from: %w", err)
	}
	return nil
}
