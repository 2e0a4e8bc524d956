package sandboxclaim

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// bind takes member out of its pool for claim with one merge patch that carries the member's
// resourceVersion as it was read: the patch is the binding, and since only one write at that
// version can succeed, a sandbox is bound to at most one claim, whatever processes race for it.
// It returns the bound Sandbox as the API server returned it, or nil when the patch lost: a 409
// (someone bound or changed the member first) or a 404 (it is gone).
func (r *Reconciler) bind(ctx context.Context, claim *extv1beta1.SandboxClaim, member *sandboxv1beta1.Sandbox,
	tpl *extv1beta1.SandboxTemplate) (*sandboxv1beta1.Sandbox, error) {
	ctx, span := r.tracer.Start(ctx, spanBind, trace.WithAttributes(attribute.String("sandbox.name", member.Name)))
	defer span.End()
	// A fresh object: the response is decoded into it, and decoding into the cached copy would
	// merge maps (labels) instead of replacing them.
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: member.Namespace, Name: member.Name}}
	err := r.client.Patch(ctx, sb, client.RawPatch(types.MergePatchType, bindPatch(member, claim, tpl)), client.FieldOwner(FieldManager))
	switch {
	case err == nil:
		return sb, nil
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		span.SetAttributes(attribute.Bool("bind.lost", true))
		return nil, nil
	}
	span.SetStatus(codes.Error, err.Error())
	return nil, fmt.Errorf("binding Sandbox %s to SandboxClaim %s: %w", member.Name, claim.Name, err)
}

// bindPatch is the JSON merge patch that binds member to claim: at member's resourceVersion, it
// makes the claim the only owner and controller (the pool's reference goes), drops the
// warm-pool-sandbox label, sets claim-uid and launch-type=warm, carries the claim's trace context,
// and adds the claim's additionalPodMetadata to the pod template (from which the Sandbox
// controller relabels the running Pod, without restarting it), and the claim's idlePolicy, which
// replaces the template's, and the claim's egress narrowing the template's. A member's pod
// template is its template's, so a claim without any of these changes only metadata: the
// member's generation stays, and the Sandbox controller has no new observedGeneration to write
// (the Pod loses the pool's label and safe-to-evict because the Sandbox lost its pool label).
// Members built by earlier versions carry the pool's label and safe-to-evict in their pod
// template; the patch removes them there, leaving safe-to-evict when the template or the claim
// sets it.
func bindPatch(member *sandboxv1beta1.Sandbox, claim *extv1beta1.SandboxClaim, tpl *extv1beta1.SandboxTemplate) []byte {
	owner := metav1.OwnerReference{
		APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim", Name: claim.Name, UID: claim.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	md := map[string]any{
		"resourceVersion": member.ResourceVersion,
		"ownerReferences": []metav1.OwnerReference{owner},
		"labels": map[string]any{
			sandboxv1beta1.WarmPoolSandboxLabel: nil,
			sandboxv1beta1.ClaimUIDLabel:        string(claim.UID),
			sandboxv1beta1.LaunchTypeLabel:      extv1beta1.LaunchTypeWarm,
		},
	}
	if tc := claim.Annotations[sandboxv1beta1.TraceContextAnnotation]; tc != "" {
		md["annotations"] = map[string]any{sandboxv1beta1.TraceContextAnnotation: tc}
	}

	have := member.Spec.PodTemplate.Metadata
	podLabels := map[string]any{}
	if _, ok := have.Labels[sandboxv1beta1.WarmPoolSandboxLabel]; ok {
		podLabels[sandboxv1beta1.WarmPoolSandboxLabel] = nil
	}
	for k, v := range claim.Spec.AdditionalPodMetadata.Labels {
		podLabels[k] = v
	}
	podAnnotations := map[string]any{}
	if _, ok := have.Annotations[extv1beta1.SafeToEvictAnnotation]; ok {
		if _, templateSets := tpl.Spec.PodTemplate.Metadata.Annotations[extv1beta1.SafeToEvictAnnotation]; !templateSets {
			podAnnotations[extv1beta1.SafeToEvictAnnotation] = nil
		}
	}
	for k, v := range claim.Spec.AdditionalPodMetadata.Annotations {
		podAnnotations[k] = v
	}
	podMeta := map[string]any{}
	if len(podLabels) > 0 {
		podMeta["labels"] = podLabels
	}
	if len(podAnnotations) > 0 {
		podMeta["annotations"] = podAnnotations
	}

	spec := map[string]any{}
	if len(podMeta) > 0 {
		spec["podTemplate"] = map[string]any{"metadata": podMeta}
	}
	if claim.Spec.IdlePolicy != nil {
		spec["idlePolicy"] = claim.Spec.IdlePolicy
	}
	if claim.Spec.Egress != nil && tpl.Spec.Egress != nil {
		// The member carries the template's egress (its hash says so); kubox-egress reads the
		// narrowed one from the Sandbox, without touching the running Pod.
		spec["egress"] = egressPatch(effectiveEgress(claim, tpl))
	}
	patch := map[string]any{"metadata": md}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	b, err := json.Marshal(patch)
	if err != nil {
		panic(fmt.Sprintf("marshalling a patch of plain maps cannot fail: %v", err))
	}
	return b
}
