package sandboxwarmpool

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
)

// SetupWithManager registers the controller with mgr. It watches pools (every change, its own
// status writes included: a status write that lost a race against one of them must be retried
// once the cache holds the newer pool, and that event is what brings it), Sandboxes (every event about one a pool
// controls, or controlled, wakes that pool and feeds its expectations; an orphan's event wakes
// the pool its label names), and SandboxTemplates (a template created, changed or deleted wakes
// the pools that name it).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&extv1beta1.SandboxWarmPool{}).
		Watches(&sandboxv1beta1.Sandbox{}, &memberHandler{
			owner: handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &extv1beta1.SandboxWarmPool{},
				handler.OnlyControllerOwner()),
			orphans:      handler.EnqueueRequestsFromMapFunc(r.orphanToPools),
			expectations: r.expectations,
			refill:       r.refill,
		}).
		Watches(&extv1beta1.SandboxTemplate{}, handler.EnqueueRequestsFromMapFunc(r.templateToPools),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(opts).
		Complete(r)
}

// templateToPools maps a SandboxTemplate to the pools that name it.
func (r *Reconciler) templateToPools(ctx context.Context, tpl client.Object) []reconcile.Request {
	pools := &extv1beta1.SandboxWarmPoolList{}
	if err := r.client.List(ctx, pools, client.InNamespace(tpl.GetNamespace()),
		client.MatchingFields{indexer.WarmPoolTemplateRefKey: tpl.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the SandboxWarmPools of a SandboxTemplate", "sandboxTemplate", tpl.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(pools.Items))
	for i := range pools.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pools.Items[i])})
	}
	return reqs
}

// orphanToPools maps an unowned Sandbox labelled as a pool's member to the pools of its
// namespace whose name hashes to the label, so that a pool adopts it.
func (r *Reconciler) orphanToPools(ctx context.Context, obj client.Object) []reconcile.Request {
	label := obj.GetLabels()[sandboxv1beta1.WarmPoolSandboxLabel]
	if label == "" || metav1.GetControllerOf(obj) != nil || obj.GetDeletionTimestamp() != nil {
		return nil
	}
	pools := &extv1beta1.SandboxWarmPoolList{}
	if err := r.client.List(ctx, pools, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the SandboxWarmPools an orphaned Sandbox may belong to", "sandbox", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range pools.Items {
		if sandboxv1beta1.NameHash(pools.Items[i].Name) == label {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pools.Items[i])})
		}
	}
	return reqs
}

// memberHandler handles Sandbox events: it tells the expectations of the pool that controls (or
// controlled) the Sandbox what the informer saw, then enqueues that pool, and the pool an orphan
// is labelled for.
type memberHandler struct {
	owner, orphans handler.EventHandler
	expectations   *inflight.Expectations
	refill         *refillGate
}

var _ handler.EventHandler = (*memberHandler)(nil)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Create implements handler.EventHandler.
func (h *memberHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.observe(e.Object, false)
	h.owner.Create(ctx, e, q)
	h.orphans.Create(ctx, e, q)
}

// Update implements handler.EventHandler. A claim binding a member changes its controller: the
// old pool is told and woken too, and its refill is held (refill.go).
func (h *memberHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.observe(e.ObjectOld, false)
	h.observe(e.ObjectNew, false)
	if from, ok := poolOf(e.ObjectOld); ok && e.ObjectNew.GetDeletionTimestamp() == nil {
		if to, _ := poolOf(e.ObjectNew); to != from {
			h.refill.taken(from)
		}
	}
	h.owner.Update(ctx, e, q)
	h.orphans.Update(ctx, e, q)
}

// Delete implements handler.EventHandler.
func (h *memberHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.observe(e.Object, true)
	h.owner.Delete(ctx, e, q)
}

// Generic implements handler.EventHandler.
func (h *memberHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.owner.Generic(ctx, e, q)
}

// observe feeds the expectations of the pool controlling obj: the informer has seen it, and seen
// it deleted when gone is true or it carries a deletion timestamp.
func (h *memberHandler) observe(obj client.Object, gone bool) {
	key, ok := poolOf(obj)
	if !ok {
		return
	}
	h.expectations.CreationObserved(key, obj.GetUID())
	if gone || obj.GetDeletionTimestamp() != nil {
		h.expectations.DeletionObserved(key, obj.GetUID())
	}
}

// poolOf returns the expectations key of the pool controlling obj, if a pool does.
func poolOf(obj client.Object) (string, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "SandboxWarmPool" {
		return "", false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != extv1beta1.GroupVersion.Group {
		return "", false
	}
	return client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}.String(), true
}
