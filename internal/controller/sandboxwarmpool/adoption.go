package sandboxwarmpool

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// adoptOrphans makes the pool the controller of the unowned Sandboxes labelled as its members,
// such as those a pool deleted with orphan propagation left behind. A Sandbox that was ever bound
// to a claim (it carries a claim-uid label) is never taken back into a pool, and one another
// controller owns is never touched (the index only holds unowned ones, and the optimistically
// locked patch fails if that changed). Adopted Sandboxes count as members in this same pass, so
// they are not created twice; the update strategy and spec.replicas then apply to them as to any
// member. An adoption is expected like a creation: until the cache shows the member as the pool's,
// a later pass would see it still orphaned, fail to adopt it again, and create its replacement.
func (r *Reconciler) adoptOrphans(ctx context.Context, pool *extv1beta1.SandboxWarmPool, obs *observed) error {
	var errs []error
	key := poolKey(pool)
	for _, sb := range obs.orphans {
		if !adoptable(sb) {
			continue
		}
		base := sb.DeepCopy()
		if err := controllerutil.SetControllerReference(pool, sb, r.scheme); err != nil {
			errs = append(errs, fmt.Errorf("adopting Sandbox %s: %w", sb.Name, err))
			continue
		}
		r.expectations.ExpectCreations(key, 1)
		if err := r.client.Patch(ctx, sb, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(FieldManager)); err != nil {
			r.expectations.CreationFailed(key)
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				// Changed or gone since the cache showed it; its own event brings the pool back.
				continue
			}
			errs = append(errs, fmt.Errorf("adopting Sandbox %s: %w", sb.Name, err))
			continue
		}
		r.expectations.CreationSucceeded(key, sb.UID)
		obs.members = append(obs.members, obs.newMember(pool, sb))
		obs.recordAction(corev1.EventTypeNormal, EventAdopted, "Adopt", fmt.Sprintf("Adopted orphaned member %s", sb.Name))
	}
	return errors.Join(errs...)
}

// adoptable reports whether sb, an unowned Sandbox labelled as a member of the pool, may join it.
func adoptable(sb *sandboxv1beta1.Sandbox) bool {
	_, claimed := sb.Labels[sandboxv1beta1.ClaimUIDLabel]
	return sb.DeletionTimestamp == nil && !claimed && metav1.GetControllerOf(sb) == nil
}
