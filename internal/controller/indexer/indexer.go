// Package indexer registers the field indexes the controllers query their informer caches with,
// so no reconciler lists objects without an index on its hot path.
package indexer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControllerUIDKey indexes objects by the UID of their controller owner reference.
const ControllerUIDKey = "metadata.ownerReferences.controller.uid"

// ControllerUID is the index function of ControllerUIDKey.
func ControllerUID(obj client.Object) []string {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// Setup registers every index on the manager's field indexer.
func Setup(ctx context.Context, fi client.FieldIndexer) error {
	if err := fi.IndexField(ctx, &corev1.Pod{}, ControllerUIDKey, ControllerUID); err != nil {
		return fmt.Errorf("indexing Pods by controller UID: %w", err)
	}
	return nil
}
