package sandbox

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// reconcilePVCs creates one PersistentVolumeClaim per volume claim template, named
// <template>-<sandbox>, and adopts a pre-existing one when the adoption rules allow. Claims are
// never updated: the templates are immutable, and a bound claim's spec cannot change anyway.
func (r *Reconciler) reconcilePVCs(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) error {
	for i := range sb.Spec.VolumeClaimTemplates {
		if err := r.reconcilePVC(ctx, sb, &sb.Spec.VolumeClaimTemplates[i], obs); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) reconcilePVC(ctx context.Context, sb *sandboxv1beta1.Sandbox, vct *sandboxv1beta1.PersistentVolumeClaimTemplate,
	obs *observed) error {
	pvc, err := r.buildPVC(sb, vct)
	if err != nil {
		return err
	}
	existing := &corev1.PersistentVolumeClaim{}
	err = r.client.Get(ctx, client.ObjectKeyFromObject(pvc), existing)
	switch {
	case err == nil && owns(sb, existing):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	err = r.client.Create(ctx, pvc, client.FieldOwner(FieldManager))
	switch {
	case err == nil:
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(pvc), existing); err != nil {
		return fmt.Errorf("reading existing PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	return r.adopt(ctx, sb, existing, obs)
}

func (r *Reconciler) buildPVC(sb *sandboxv1beta1.Sandbox, vct *sandboxv1beta1.PersistentVolumeClaimTemplate) (*corev1.PersistentVolumeClaim, error) {
	lbls := map[string]string{}
	for k, v := range vct.Metadata.Labels {
		lbls[k] = v
	}
	lbls[sandboxv1beta1.SandboxNameHashLabel] = sandboxv1beta1.NameHash(sb.Name)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        sandboxv1beta1.PVCName(vct.Metadata.Name, sb.Name),
			Namespace:   sb.Namespace,
			Labels:      lbls,
			Annotations: vct.Metadata.Annotations,
		},
		Spec: *vct.Spec.DeepCopy(),
	}
	if err := controllerutil.SetControllerReference(sb, pvc, r.scheme); err != nil {
		return nil, fmt.Errorf("setting the owner of PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	return pvc, nil
}

// ownedPVCs returns the claims made from sb's templates that sb controls, read from the cache.
func (r *Reconciler) ownedPVCs(ctx context.Context, sb *sandboxv1beta1.Sandbox) ([]*corev1.PersistentVolumeClaim, error) {
	var out []*corev1.PersistentVolumeClaim
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		pvc := &corev1.PersistentVolumeClaim{}
		key := client.ObjectKey{Namespace: sb.Namespace, Name: sandboxv1beta1.PVCName(vct.Metadata.Name, sb.Name)}
		if err := r.client.Get(ctx, key, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading PersistentVolumeClaim %s: %w", key.Name, err)
		}
		if owns(sb, pvc) {
			out = append(out, pvc)
		}
	}
	return out, nil
}
