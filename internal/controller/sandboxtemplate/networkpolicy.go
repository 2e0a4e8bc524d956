package sandboxtemplate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/provenance"
)

// NetworkPolicyCache scopes the NetworkPolicy informer to policies carrying the
// sandbox-template-ref-hash label, which every policy this controller creates or repairs has, so
// the cache does not hold the rest of the cluster's policies.
func NetworkPolicyCache() cache.ByObject {
	req, err := labels.NewRequirement(sandboxv1beta1.SandboxTemplateRefHashLabel, selection.Exists, nil)
	utilruntime.Must(err)
	return cache.ByObject{Label: labels.NewSelector().Add(*req)}
}

// reconcileNetworkPolicy implements spec.networkPolicy and spec.networkPolicyManagement: while
// Managed, one NetworkPolicy controlled by the template holds exactly the rules the template asks
// for; Unmanaged, the one the template controls is deleted. A policy of that name that the
// template does not control is never written.
func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, tpl *extv1beta1.SandboxTemplate) (ctrl.Result, error) {
	if tpl.Spec.NetworkPolicyManagement == extv1beta1.NetworkPolicyManagementUnmanaged {
		return ctrl.Result{}, r.deleteNetworkPolicy(ctx, tpl)
	}
	want, err := r.buildNetworkPolicy(tpl)
	if err != nil {
		return ctrl.Result{}, err
	}
	have := &networkingv1.NetworkPolicy{}
	err = r.client.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		return r.createNetworkPolicy(ctx, tpl, want)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading NetworkPolicy %s: %w", want.Name, err)
	}
	return r.repairNetworkPolicy(ctx, tpl, have, want)
}

// createNetworkPolicy creates want. When a policy of that name exists but the cache does not
// show it (it lacks the label), it is read from the API server and handled as an existing one.
func (r *Reconciler) createNetworkPolicy(ctx context.Context, tpl *extv1beta1.SandboxTemplate,
	want *networkingv1.NetworkPolicy) (ctrl.Result, error) {
	created := want.DeepCopy()
	err := r.client.Create(ctx, created)
	switch {
	case err == nil:
		r.recorder.Eventf(tpl, created, corev1.EventTypeNormal, EventNetworkPolicyCreated, "CreateNetworkPolicy",
			"Created NetworkPolicy %s", want.Name)
		return ctrl.Result{}, nil
	case !apierrors.IsAlreadyExists(err):
		return ctrl.Result{}, fmt.Errorf("creating NetworkPolicy %s: %w", want.Name, err)
	}
	have := &networkingv1.NetworkPolicy{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		// Gone again: the delete event (or the error's retry) brings the template back.
		return ctrl.Result{}, fmt.Errorf("reading existing NetworkPolicy %s: %w", want.Name, err)
	}
	return r.repairNetworkPolicy(ctx, tpl, have, want)
}

// repairNetworkPolicy patches have, the existing policy, back to want when the template controls
// it and it drifted. The patch carries have's resourceVersion, so it cannot land on a policy that
// was replaced in between. A policy the template does not control is reported and left alone.
func (r *Reconciler) repairNetworkPolicy(ctx context.Context, tpl *extv1beta1.SandboxTemplate,
	have, want *networkingv1.NetworkPolicy) (ctrl.Result, error) {
	if !provenance.ControlledBy(have, provenance.SandboxTemplate, tpl.UID) {
		r.reportConflict(ctx, tpl, have)
		return ctrl.Result{RequeueAfter: conflictRecheckInterval}, nil
	}
	hash := want.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel]
	if have.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel] == hash && equality.Semantic.DeepEqual(have.Spec, want.Spec) {
		return ctrl.Result{}, nil
	}
	patched := have.DeepCopy()
	if patched.Labels == nil {
		patched.Labels = map[string]string{}
	}
	patched.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel] = hash
	// The whole spec is replaced: a JSON merge patch of it removes map keys and list items that
	// someone added (an extra podSelector label would leave the sandboxes unconfined).
	patched.Spec = want.Spec
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(have, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, fmt.Errorf("repairing NetworkPolicy %s: %w", have.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Repaired drifted NetworkPolicy", "networkPolicy", klog.KObj(have))
	r.recorder.Eventf(tpl, have, corev1.EventTypeNormal, EventNetworkPolicyRepaired, "RepairNetworkPolicy",
		"NetworkPolicy %s had been changed; restored the rules the template asks for", have.Name)
	return ctrl.Result{}, nil
}

// reportConflict tells the template's owner, with a Warning event and a log line, that its
// NetworkPolicy name is taken by a policy it does not control.
func (r *Reconciler) reportConflict(ctx context.Context, tpl *extv1beta1.SandboxTemplate, np *networkingv1.NetworkPolicy) {
	owner := "no controller"
	if ref := metav1.GetControllerOf(np); ref != nil {
		owner = fmt.Sprintf("controller %s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	ctrl.LoggerFrom(ctx).Info("NetworkPolicy is not controlled by the SandboxTemplate; leaving it alone",
		"networkPolicy", klog.KObj(np), "owner", owner)
	r.recorder.Eventf(tpl, np, corev1.EventTypeWarning, EventNetworkPolicyConflict, "CreateNetworkPolicy",
		"NetworkPolicy %s already exists with %s and is left alone, so the template's sandboxes get no managed policy: "+
			"delete or rename it, or set spec.networkPolicyManagement to Unmanaged", np.Name, owner)
}

// deleteNetworkPolicy deletes the template's NetworkPolicy if the template controls it. It reads
// from the API server: a policy created by an earlier release may lack the label the cache is
// scoped by, and Unmanaged templates are reconciled rarely.
func (r *Reconciler) deleteNetworkPolicy(ctx context.Context, tpl *extv1beta1.SandboxTemplate) error {
	np := &networkingv1.NetworkPolicy{}
	key := client.ObjectKey{Namespace: tpl.Namespace, Name: extv1beta1.NetworkPolicyName(tpl.Name)}
	if err := r.apiReader.Get(ctx, key, np); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("reading NetworkPolicy %s: %w", key.Name, err))
	}
	if !provenance.ControlledBy(np, provenance.SandboxTemplate, tpl.UID) || np.DeletionTimestamp != nil {
		return nil
	}
	if err := r.client.Delete(ctx, np, client.Preconditions{UID: &np.UID}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting NetworkPolicy %s: %w", np.Name, err))
	}
	r.recorder.Eventf(tpl, np, corev1.EventTypeNormal, EventNetworkPolicyDeleted, "DeleteNetworkPolicy",
		"Deleted NetworkPolicy %s: spec.networkPolicyManagement is Unmanaged", np.Name)
	return nil
}

// buildNetworkPolicy returns the NetworkPolicy the Managed template asks for, controlled by it.
func (r *Reconciler) buildNetworkPolicy(tpl *extv1beta1.SandboxTemplate) (*networkingv1.NetworkPolicy, error) {
	hash := sandboxv1beta1.NameHash(tpl.Name)
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:      extv1beta1.NetworkPolicyName(tpl.Name),
			Namespace: tpl.Namespace,
			Labels:    map[string]string{sandboxv1beta1.SandboxTemplateRefHashLabel: hash},
		},
		Spec: networkPolicySpec(tpl, r.settings),
	}
	if err := controllerutil.SetControllerReference(tpl, np, r.scheme); err != nil {
		return nil, fmt.Errorf("setting the owner of NetworkPolicy %s: %w", np.Name, err)
	}
	return np, nil
}

// networkPolicySpec is the spec of a Managed template's NetworkPolicy: it selects the template's
// Pods by their sandbox-template-ref-hash label and confines them in both directions, with the
// template's rules or, when it has none, with the secure default; a template with spec.egress
// may reach only DNS, kubox-egress and its own egress rules. The result is in the form the
// API server stores, so it can be compared with a stored policy.
func networkPolicySpec(tpl *extv1beta1.SandboxTemplate, settings configv1alpha1.NetworkPolicySettings) networkingv1.NetworkPolicySpec {
	spec := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
			sandboxv1beta1.SandboxTemplateRefHashLabel: sandboxv1beta1.NameHash(tpl.Name),
		}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
	}
	if rules := tpl.Spec.NetworkPolicy; rules != nil {
		rules = rules.DeepCopy()
		spec.Ingress, spec.Egress = rules.Ingress, rules.Egress
	} else {
		spec.Ingress, spec.Egress = secureDefaultIngress(settings.Router), secureDefaultEgress(settings.ClusterDNS)
	}
	if tpl.Spec.Egress != nil {
		var extra []networkingv1.NetworkPolicyEgressRule
		if tpl.Spec.NetworkPolicy != nil {
			extra = spec.Egress
		}
		spec.Egress = egressThroughProxy(settings, extra)
	}
	defaultProtocols(&spec)
	return spec
}

// defaultProtocols sets the protocol of every port that has none to TCP, as the API server does
// when it stores a NetworkPolicy.
func defaultProtocols(spec *networkingv1.NetworkPolicySpec) {
	set := func(ports []networkingv1.NetworkPolicyPort) {
		for i := range ports {
			if ports[i].Protocol == nil {
				tcp := corev1.ProtocolTCP
				ports[i].Protocol = &tcp
			}
		}
	}
	for i := range spec.Ingress {
		set(spec.Ingress[i].Ports)
	}
	for i := range spec.Egress {
		set(spec.Egress[i].Ports)
	}
}
