package sandboxclaim

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
)

// SetupWithManager registers the controller with mgr. It watches claims; the Sandboxes claims
// control, when what a claim mirrors changes; and pools and templates, when one appears, goes or
// changes its spec, for the claims that still wait for a sandbox from them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		Watches(&extv1beta1.SandboxClaim{}, claimHandler{EventHandler: &handler.EnqueueRequestForObject{}, r: r}).
		Watches(&sandboxv1beta1.Sandbox{}, sandboxHandler{r: r, EventHandler: handler.EnqueueRequestForOwner(
			mgr.GetScheme(), mgr.GetRESTMapper(), &extv1beta1.SandboxClaim{}, handler.OnlyControllerOwner())},
			builder.WithPredicates(mirroredFieldsChanged())).
		Watches(&extv1beta1.SandboxWarmPool{}, handler.EnqueueRequestsFromMapFunc(r.claimsOfPool),
			builder.WithPredicates(appearedGoneOrSpecChanged())).
		Watches(&extv1beta1.SandboxTemplate{}, handler.EnqueueRequestsFromMapFunc(r.claimsOfTemplate),
			builder.WithPredicates(appearedGoneOrSpecChanged())).
		WithOptions(opts).
		Complete(r)
}

// claimHandler enqueues claims, and keeps the controller's memory of them: when the informer
// delivered each (the start of its latency metrics), which wait for the controller (yield.go),
// and nothing once it is deleted.
type claimHandler struct {
	handler.EventHandler
	r *Reconciler
}

// Create records when the claim was first seen and enqueues it.
func (h claimHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.r.timeline.observe(e.Object.GetUID())
	h.markWaiting(e.Object)
	h.EventHandler.Create(ctx, e, q)
}

// Update enqueues the claim, waiting unless it is Ready.
func (h claimHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.markWaiting(e.ObjectNew)
	h.EventHandler.Update(ctx, e, q)
}

// markWaiting marks a claim that is not Ready, nor being deleted, as waiting for the controller.
// A Ready claim's changes (the controller's own annotations among them) make nothing wait.
func (h claimHandler) markWaiting(obj client.Object) {
	if c, ok := obj.(*extv1beta1.SandboxClaim); ok && c.DeletionTimestamp == nil && !isReady(c.Status.Conditions) {
		h.r.optional.wait(client.ObjectKeyFromObject(c))
	}
}

// Delete forgets the claim; its sandbox goes with it through its owner reference.
func (h claimHandler) Delete(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	uid := e.Object.GetUID()
	h.r.timeline.forget(uid)
	h.r.memory.forget(uid)
	h.r.optional.forget(client.ObjectKeyFromObject(e.Object))
}

// sandboxHandler enqueues the claim that controls a Sandbox, marking it waiting: what it
// mirrors changed (mirroredFieldsChanged), so its status is to be written.
type sandboxHandler struct {
	handler.EventHandler
	r *Reconciler
}

func (h sandboxHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.markOwner(e.Object)
	h.EventHandler.Create(ctx, e, q)
}

func (h sandboxHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.markOwner(e.ObjectOld)
	h.markOwner(e.ObjectNew)
	h.EventHandler.Update(ctx, e, q)
}

func (h sandboxHandler) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.markOwner(e.Object)
	h.EventHandler.Delete(ctx, e, q)
}

// markOwner marks the claim that controls obj, if one does, as waiting.
func (h sandboxHandler) markOwner(obj client.Object) {
	if ref := metav1.GetControllerOf(obj); ref != nil && ref.Kind == "SandboxClaim" && ref.APIVersion == extv1beta1.GroupVersion.String() {
		h.r.optional.wait(client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name})
	}
}

// mirroredFieldsChanged passes a Sandbox update only when something a claim mirrors or acts on
// changed: its Ready or Finished condition, its Pod IPs, its controller (a bind) or its deletion.
// Other writes (the pod-name annotation, PodScheduled, nodeName) wake no claim.
func mirroredFieldsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldSB, okOld := e.ObjectOld.(*sandboxv1beta1.Sandbox)
			newSB, okNew := e.ObjectNew.(*sandboxv1beta1.Sandbox)
			if !okOld || !okNew {
				return true
			}
			return !sameCondition(oldSB, newSB, sandboxv1beta1.SandboxConditionReady) ||
				!sameCondition(oldSB, newSB, sandboxv1beta1.SandboxConditionFinished) ||
				!slices.Equal(oldSB.Status.PodIPs, newSB.Status.PodIPs) ||
				oldSB.Status.ServiceFQDN != newSB.Status.ServiceFQDN ||
				!equality.Semantic.DeepEqual(metav1.GetControllerOf(oldSB), metav1.GetControllerOf(newSB)) ||
				(oldSB.DeletionTimestamp == nil) != (newSB.DeletionTimestamp == nil)
		},
	}
}

func sameCondition(a, b *sandboxv1beta1.Sandbox, condType string) bool {
	ca, cb := meta.FindStatusCondition(a.Status.Conditions, condType), meta.FindStatusCondition(b.Status.Conditions, condType)
	if ca == nil || cb == nil {
		return ca == nil && cb == nil
	}
	return ca.Status == cb.Status && ca.Reason == cb.Reason && ca.Message == cb.Message &&
		ca.LastTransitionTime.Equal(&cb.LastTransitionTime)
}

// appearedGoneOrSpecChanged passes creations, deletions and spec changes (a new generation) of a
// pool or template, and not its status writes, which a busy pool makes on every member change.
func appearedGoneOrSpecChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// claimsOfPool maps a pool to the claims that name it and have no sandbox yet.
func (r *Reconciler) claimsOfPool(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.waitingClaims(ctx, obj.GetNamespace(), indexer.ClaimWarmPoolKey, obj.GetName())
}

// claimsOfTemplate maps a template to the claims that have no sandbox yet and name it, or name a
// pool of it.
func (r *Reconciler) claimsOfTemplate(ctx context.Context, obj client.Object) []reconcile.Request {
	reqs := r.waitingClaims(ctx, obj.GetNamespace(), indexer.ClaimTemplateKey, obj.GetName())
	pools := &extv1beta1.SandboxWarmPoolList{}
	if err := r.client.List(ctx, pools, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{indexer.WarmPoolTemplateRefKey: obj.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the SandboxWarmPools of a SandboxTemplate", "template", obj.GetName())
		return reqs
	}
	for i := range pools.Items {
		reqs = append(reqs, r.waitingClaims(ctx, obj.GetNamespace(), indexer.ClaimWarmPoolKey, pools.Items[i].Name)...)
	}
	return reqs
}

// waitingClaims returns requests for the claims in ns whose index key has value and that have no
// sandbox yet (a claim with one does not care about its pool or template any more).
func (r *Reconciler) waitingClaims(ctx context.Context, ns, key, value string) []reconcile.Request {
	claims := &extv1beta1.SandboxClaimList{}
	if err := r.client.List(ctx, claims, client.InNamespace(ns), client.MatchingFields{key: value}, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing SandboxClaims", "index", key, "value", value)
		return nil
	}
	var reqs []reconcile.Request
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.Sandbox.Name == "" && c.DeletionTimestamp == nil {
			r.optional.wait(client.ObjectKeyFromObject(c))
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return reqs
}
