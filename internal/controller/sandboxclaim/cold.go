package sandboxclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/provenance"
)

// createPendingRetry is how soon a claim whose Sandbox name was taken by an object that vanished
// before it could be read tries again.
const createPendingRetry = 200 * time.Millisecond

// acquireCold implements the cold path: it creates a Sandbox named like the claim from the
// template, with the claim's env, volume claim templates and pod metadata merged in as the
// template allows. A Sandbox of that name that the claim does not control is never touched: the
// claim reports AdoptionConflict, or, when an earlier claim of its name controls it, waits for
// the garbage collector to delete it (SandboxCreatePending).
func (r *Reconciler) acquireCold(ctx context.Context, claim *extv1beta1.SandboxClaim, src *source, obs *observed) error {
	sb, f := buildColdSandbox(claim, src.template)
	if f != nil {
		obs.fail(f)
		return nil
	}
	existing := &sandboxv1beta1.Sandbox{}
	found, err := r.getCached(ctx, claim.Namespace, claim.Name, existing)
	if err != nil {
		return err
	}
	if found {
		r.takeExisting(claim, existing, obs)
		return nil
	}
	if err := controllerutil.SetControllerReference(claim, sb, r.scheme); err != nil {
		return fmt.Errorf("setting the owner of Sandbox %s: %w", sb.Name, err)
	}
	cctx, span := r.tracer.Start(ctx, spanCreate)
	err = r.client.Create(cctx, sb, client.FieldOwner(FieldManager))
	span.End()
	switch {
	case apierrors.IsAlreadyExists(err):
		// The cache had not seen it yet.
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}, existing)
		switch {
		case apierrors.IsNotFound(err):
			obs.fail(fail(extv1beta1.ClaimReasonSandboxCreatePending,
				"Sandbox %s was being created or deleted by someone else; retrying", claim.Name))
			obs.requeueSoon(createPendingRetry)
		case err != nil:
			return fmt.Errorf("reading existing Sandbox %s: %w", claim.Name, err)
		default:
			r.takeExisting(claim, existing, obs)
		}
		return nil
	case err != nil:
		return fmt.Errorf("creating Sandbox %s: %w", sb.Name, err)
	}
	now := r.clock.Now()
	r.memory.expect(claim.UID, sb.Name)
	r.timeline.bound(claim.UID, now)
	obs.bind(sb)
	obs.acquired = &acquisition{launchType: extv1beta1.LaunchTypeCold, template: src.template.Name, warmPool: src.poolName(), at: now}
	obs.events = append(obs.events, status.Event{Related: sb, Type: corev1.EventTypeNormal, Reason: EventSandboxProvisioned, Action: "Create",
		Note: fmt.Sprintf("Created Sandbox %s from SandboxTemplate %s", sb.Name, src.template.Name)})
	return nil
}

// takeExisting uses the Sandbox named like the claim when the claim controls it (this controller
// created it and the index has not caught up), waits when an earlier claim of this name controls
// it (predecessorSandbox), and otherwise reports the conflict.
func (r *Reconciler) takeExisting(claim *extv1beta1.SandboxClaim, existing *sandboxv1beta1.Sandbox, obs *observed) {
	if provenance.ControlledBy(existing, provenance.SandboxClaim, claim.UID) {
		obs.bind(existing)
		r.memory.expect(claim.UID, existing.Name)
		return
	}
	if ref, ok := predecessorSandbox(claim, existing); ok {
		// Its deletion event, mapped to this claim by the reference's name, brings the claim back.
		obs.fail(fail(extv1beta1.ClaimReasonSandboxCreatePending,
			"Sandbox %s belongs to an earlier SandboxClaim %s (uid %s), deleted before this one was created; "+
				"the claim gets its own Sandbox once the garbage collector has deleted that one", existing.Name, ref.Name, ref.UID))
		return
	}
	owner := "nothing"
	if ref := metav1.GetControllerOf(existing); ref != nil {
		owner = fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	}
	obs.fail(fail(extv1beta1.ClaimReasonAdoptionConflict,
		"Sandbox %s already exists and is controlled by %s, not by this claim; it is left alone: delete it, or use another claim name",
		existing.Name, owner))
}

// predecessorSandbox reports whether existing, the Sandbox named like claim, is controlled by an
// earlier claim of claim's name (a claim deleted and created again): a SandboxClaim reference of
// that name and another UID. Two claims cannot hold one name at once, so that owner is gone and
// the garbage collector deletes existing; the claim waits for it instead of reporting a conflict.
// The Sandbox is never touched, whoever made it: one forged to look so is deleted by the garbage
// collector all the same, its owner being absent.
func predecessorSandbox(claim *extv1beta1.SandboxClaim, existing *sandboxv1beta1.Sandbox) (metav1.OwnerReference, bool) {
	ref := metav1.GetControllerOf(existing)
	if ref == nil || ref.Name != claim.Name || ref.UID == claim.UID || existing.Name != claim.Name {
		return metav1.OwnerReference{}, false
	}
	return *ref, provenance.ControlledBy(existing, provenance.SandboxClaim, ref.UID)
}

// buildColdSandbox returns the Sandbox the cold path creates for claim from tpl (without its
// owner reference), with the claim's idlePolicy replacing the template's, or the failure that
// forbids it: the claim's env or volume claim templates that the template's policies do not
// allow.
func buildColdSandbox(claim *extv1beta1.SandboxClaim, tpl *extv1beta1.SandboxTemplate) (*sandboxv1beta1.Sandbox, *failure) {
	bp := blueprint.FromTemplate(tpl)
	if f := mergeEnv(&bp.PodTemplate.Spec, claim.Spec.Env, tpl.Spec.EnvVarsInjectionPolicy, tpl.Name); f != nil {
		return nil, f
	}
	vcts, f := mergeVolumeClaimTemplates(bp.VolumeClaimTemplates, claim.Spec.VolumeClaimTemplates, tpl.Spec.VolumeClaimTemplatesPolicy, tpl.Name)
	if f != nil {
		return nil, f
	}
	if f := validateClaimVolumes(claim.Spec.VolumeClaimTemplates, tpl); f != nil {
		return nil, f
	}
	bp.VolumeClaimTemplates = vcts
	bp.PodTemplate.Metadata = withAdditionalPodMetadata(bp.PodTemplate.Metadata, claim.Spec.AdditionalPodMetadata)
	if claim.Spec.IdlePolicy != nil {
		bp.IdlePolicy = claim.Spec.IdlePolicy.DeepCopy()
	}
	bp.Egress = effectiveEgress(claim, tpl)
	if claim.Spec.SnapshotRef != nil {
		bp.SnapshotRef = claim.Spec.SnapshotRef.DeepCopy()
	}
	// The Pod takes the Sandbox's name: the pod-name annotation comes with the creation rather
	// than in a patch of the Sandbox controller once the Pod exists.
	annotations := map[string]string{sandboxv1beta1.SandboxTemplateRefAnnotation: tpl.Name, sandboxv1beta1.PodNameAnnotation: claim.Name}
	if tc := claim.Annotations[sandboxv1beta1.TraceContextAnnotation]; tc != "" {
		annotations[sandboxv1beta1.TraceContextAnnotation] = tc
	}
	return &sandboxv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Name:      claim.Name,
			Namespace: claim.Namespace,
			Labels: map[string]string{
				sandboxv1beta1.ClaimUIDLabel:               string(claim.UID),
				sandboxv1beta1.LaunchTypeLabel:             extv1beta1.LaunchTypeCold,
				sandboxv1beta1.SandboxTemplateRefHashLabel: sandboxv1beta1.NameHash(tpl.Name),
				sandboxv1beta1.CreatedByLabel:              extv1beta1.CreatedByController,
			},
			Annotations: annotations,
		},
		Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: bp},
	}, nil
}

// snapshotFitsWarm reports whether a warm member of a pool of tpl can serve a claim naming
// snapshot: only when it names none, or the one the template's members start from.
func snapshotFitsWarm(snapshot *sandboxv1beta1.SnapshotReference, tpl *extv1beta1.SandboxTemplate) bool {
	return snapshot == nil || (tpl.Spec.SnapshotRef != nil && tpl.Spec.SnapshotRef.Name == snapshot.Name)
}
