package sandboxtemplate

import (
	"context"
	"errors"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Name is the controller's name in logs, metrics and events.
const Name = "sandboxtemplate"

// Event reasons.
const (
	// EventNetworkPolicyCreated: the template's NetworkPolicy was created.
	EventNetworkPolicyCreated = "NetworkPolicyCreated"
	// EventNetworkPolicyRepaired: the template's NetworkPolicy had been changed by someone else
	// and was patched back.
	EventNetworkPolicyRepaired = "NetworkPolicyRepaired"
	// EventNetworkPolicyDeleted: the template became Unmanaged and its NetworkPolicy was deleted.
	EventNetworkPolicyDeleted = "NetworkPolicyDeleted"
	// EventNetworkPolicyConflict: a NetworkPolicy with the template's policy name exists and is not
	// controlled by the template; it is left alone, and the template's sandboxes are not confined
	// by a managed policy.
	EventNetworkPolicyConflict = "NetworkPolicyConflict"
)

// conflictRecheckInterval is how often a Managed template whose NetworkPolicy name is taken by a
// policy it does not control looks again. Such a policy is outside the label-scoped cache, so
// its deletion sends no event.
const conflictRecheckInterval = time.Minute

// Reconciler reconciles SandboxTemplates.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	scheme    *runtime.Scheme
	recorder  events.EventRecorder
	settings  configv1alpha1.NetworkPolicySettings
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// NewReconciler returns a Reconciler. c reads from the informer cache, whose NetworkPolicies are
// scoped by NetworkPolicyCache; apiReader reads from the API server and is used for
// NetworkPolicies the cache cannot see (one without the label, created by someone else or by
// an earlier release). settings select the router and the cluster DNS in the secure default.
func NewReconciler(c client.Client, apiReader client.Reader, scheme *runtime.Scheme, recorder events.EventRecorder,
	settings configv1alpha1.NetworkPolicySettings) *Reconciler {
	return &Reconciler{client: c, apiReader: apiReader, scheme: scheme, recorder: recorder, settings: *settings.DeepCopy()}
}

// Setup registers the controller with mgr, configured by cfg.
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.ControllerConfiguration, opts controller.Options) error {
	opts.MaxConcurrentReconciles = int(ptr.Deref(cfg.Controllers.SandboxTemplate.Workers, configv1alpha1.DefaultTemplateWorkers))
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), mgr.GetEventRecorder(Name), cfg.NetworkPolicy)
	if err := r.SetupWithManager(mgr, opts); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return nil
}

// SetupWithManager registers the controller with mgr. Templates are reconciled when their spec
// or labels change (not on annotation-only updates), and when their NetworkPolicy changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&extv1beta1.SandboxTemplate{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Owns(&networkingv1.NetworkPolicy{}).
		WithOptions(opts).
		Complete(r)
}

// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxtemplates,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxtemplates/finalizers,verbs=update
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile labels one SandboxTemplate and brings its NetworkPolicy to its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tpl := &extv1beta1.SandboxTemplate{}
	if err := r.client.Get(ctx, req.NamespacedName, tpl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if tpl.DeletionTimestamp != nil {
		// The garbage collector deletes the NetworkPolicy through its owner reference.
		return ctrl.Result{}, nil
	}
	// The policy is reconciled even when labelling failed: it is what confines the sandboxes.
	labelErr := r.reconcileLabel(ctx, tpl)
	res, policyErr := r.reconcileNetworkPolicy(ctx, tpl)
	if err := errors.Join(labelErr, policyErr); err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// reconcileLabel sets the template's own sandbox-template-ref-hash label, as agent-sandbox does,
// so the template can be found by the hash its sandboxes carry.
func (r *Reconciler) reconcileLabel(ctx context.Context, tpl *extv1beta1.SandboxTemplate) error {
	hash := sandboxv1beta1.NameHash(tpl.Name)
	if tpl.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel] == hash {
		return nil
	}
	base := tpl.DeepCopy()
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	tpl.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel] = hash
	if err := r.client.Patch(ctx, tpl, client.MergeFrom(base)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("labelling SandboxTemplate %s: %w", tpl.Name, err))
	}
	return nil
}
