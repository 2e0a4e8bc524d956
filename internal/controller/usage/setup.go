package usage

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Setup adds w to mgr: its handler on the manager's Sandbox informer, and its writer as a
// Runnable. It adds no finalizer and no reconciler: records are made from informer events.
func Setup(mgr ctrl.Manager, w *Watcher) error {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &sandboxv1beta1.Sandbox{})
	if err != nil {
		return fmt.Errorf("usage metering: getting the Sandbox informer: %w", err)
	}
	if _, err := inf.AddEventHandler(w); err != nil {
		return fmt.Errorf("usage metering: watching Sandboxes: %w", err)
	}
	if err := mgr.Add(w); err != nil {
		return fmt.Errorf("usage metering: adding the record writer: %w", err)
	}
	return nil
}
