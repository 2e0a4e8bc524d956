// Package indexer registers the field indexes the controllers query their informer caches with,
// so no reconciler lists objects without an index on its hot path.
package indexer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
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
	for _, obj := range []client.Object{&corev1.Pod{}, &sandboxv1beta1.Sandbox{}} {
		if err := fi.IndexField(ctx, obj, ControllerUIDKey, ControllerUID); err != nil {
			return fmt.Errorf("indexing %T by controller UID: %w", obj, err)
		}
	}
	// One entry per controller whose indexes live in a file of their own: setup<Kind>.
	for _, setup := range []func(context.Context, client.FieldIndexer) error{
		setupSandboxClaim,
		setupSandboxWarmPool,
		setupSandboxSnapshot,
	} {
		if err := setup(ctx, fi); err != nil {
			return err
		}
	}
	return nil
}
