package sandboxwarmpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/provenance"
)

// member is one Sandbox the pool controls and that is not being deleted, as this pass sees it.
type member struct {
	sandbox *sandboxv1beta1.Sandbox
	// ready: the Sandbox's Ready condition is True.
	ready bool
	// stale: built from another template, or from an older version of the pool's template.
	// Unknown, and false, while the template does not exist.
	stale bool
	// tampered: the member's spec is not the one the pool created (see tampered). It is never
	// bound and always replaced, whatever the update strategy.
	tampered bool
	// unschedulable: the Pod reports PodScheduled=False/Unschedulable or SchedulingGated;
	// schedulingMessage says why.
	unschedulable     bool
	schedulingMessage string
	// finished: the Pod terminated; the member will never be Ready again.
	finished bool
	// notReadySince is when the member was created or last stopped being Ready.
	notReadySince time.Time
	// readySince is when the member last became Ready (zero when it is not).
	readySince time.Time
}

// observed is what one pass saw of a pool's template and members, and what it did.
type observed struct {
	// template is the pool's SandboxTemplate, nil when it does not exist. blueprint and hash are
	// the members' spec and staleness hash built from it.
	template  *extv1beta1.SandboxTemplate
	blueprint sandboxv1beta1.SandboxBlueprint
	hash      string
	// members are the Sandboxes the pool controls that are not being deleted.
	members []member
	// orphans are unowned Sandboxes labelled as the pool's members.
	orphans []*sandboxv1beta1.Sandbox

	// errs are what went wrong in this pass.
	errs []error
	// requeueAfter is when the pool must be looked at again even if nothing changes.
	requeueAfter time.Duration
	// events are recorded after the status is written; actions (members this pass adopted or
	// deleted) are recorded whatever becomes of the status write, since no later pass sees them
	// again.
	events, actions []poolEvent
}

// poolEvent is one event to record about the pool.
type poolEvent struct {
	eventType, reason, action, note string
}

// wakeIn makes the pass requeue the pool after d at the latest; d <= 0 is ignored.
func (o *observed) wakeIn(d time.Duration) {
	if d > 0 && (o.requeueAfter == 0 || d < o.requeueAfter) {
		o.requeueAfter = d
	}
}

func (o *observed) record(eventType, reason, action, note string) {
	o.events = append(o.events, poolEvent{eventType: eventType, reason: reason, action: action, note: note})
}

// recordAction records an event about something this pass did.
func (o *observed) recordAction(eventType, reason, action, note string) {
	o.actions = append(o.actions, poolEvent{eventType: eventType, reason: reason, action: action, note: note})
}

// observe reads the pool's template, members and orphans from the cache.
func (r *Reconciler) observe(ctx context.Context, pool *extv1beta1.SandboxWarmPool) (*observed, error) {
	obs := &observed{}
	tpl := &extv1beta1.SandboxTemplate{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: pool.Spec.SandboxTemplateRef.Name}, tpl)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading SandboxTemplate %s of SandboxWarmPool %s: %w", pool.Spec.SandboxTemplateRef.Name, pool.Name, err)
	default:
		obs.template = tpl
		obs.blueprint = blueprint.FromTemplate(tpl)
		obs.hash = blueprint.Hash(&obs.blueprint)
	}

	owned := &sandboxv1beta1.SandboxList{}
	if err := r.client.List(ctx, owned, client.InNamespace(pool.Namespace),
		client.MatchingFields{indexer.ControllerUIDKey: string(pool.UID)}); err != nil {
		return nil, fmt.Errorf("listing the members of SandboxWarmPool %s: %w", pool.Name, err)
	}
	for i := range owned.Items {
		// The index matched the UID only; a reference of another kind carrying the pool's UID
		// makes no member.
		if sb := &owned.Items[i]; sb.DeletionTimestamp == nil && provenance.ControlledBy(sb, provenance.SandboxWarmPool, pool.UID) {
			obs.members = append(obs.members, obs.newMember(pool, sb))
		}
	}

	orphans := &sandboxv1beta1.SandboxList{}
	if err := r.client.List(ctx, orphans, client.InNamespace(pool.Namespace),
		client.MatchingFields{indexer.WarmPoolOrphanKey: sandboxv1beta1.NameHash(pool.Name)}); err != nil {
		return nil, fmt.Errorf("listing the orphaned members of SandboxWarmPool %s: %w", pool.Name, err)
	}
	for i := range orphans.Items {
		obs.orphans = append(obs.orphans, &orphans.Items[i])
	}
	return obs, nil
}

// newMember describes sb, a Sandbox the pool controls.
func (o *observed) newMember(pool *extv1beta1.SandboxWarmPool, sb *sandboxv1beta1.Sandbox) member {
	m := member{sandbox: sb, notReadySince: sb.CreationTimestamp.Time, tampered: tampered(sb)}
	if o.template != nil {
		m.stale = isStale(sb, pool.Spec.SandboxTemplateRef.Name, o.hash)
	}
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady); c != nil {
		if c.Status == metav1.ConditionTrue {
			m.ready, m.readySince = true, c.LastTransitionTime.Time
		} else if c.LastTransitionTime.After(m.notReadySince) {
			m.notReadySince = c.LastTransitionTime.Time
		}
	}
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionPodScheduled); c != nil &&
		c.Status == metav1.ConditionFalse && heldByScheduling(c.Reason) {
		m.unschedulable, m.schedulingMessage = true, c.Message
	}
	m.finished = meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionFinished)
	return m
}

// heldByScheduling reports whether a PodScheduled=False reason means the Pod waits on the cluster
// (no node fits, or scheduling gates another component must lift), so a replacement would wait
// the same way: such members are held, not churned (agent-sandbox v1 does not churn gated ones).
func heldByScheduling(reason string) bool {
	return reason == corev1.PodReasonUnschedulable || reason == corev1.PodReasonSchedulingGated
}

// tampered reports whether sb's spec is not the one the pool created: it changed since (its
// generation is not 1), or it does not hash to its sandbox-template-hash label. A member without
// that label (an orphan an administrator marked) is only stale.
func tampered(sb *sandboxv1beta1.Sandbox) bool {
	label, ok := sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel]
	return sb.Generation != 1 || (ok && blueprint.Hash(&sb.Spec.SandboxBlueprint) != label)
}

// newSandbox builds a member of pool from its template, as the contract with the claim
// controller describes it.
func (r *Reconciler) newSandbox(pool *extv1beta1.SandboxWarmPool, obs *observed) (*sandboxv1beta1.Sandbox, error) {
	tplName := obs.template.Name
	// The member's spec is the template's blueprint as it is: what only an unclaimed member's Pod
	// carries (the pool's label, safe-to-evict) the Sandbox controller derives from the member's
	// own labels, so a claim binds it with a metadata-only patch that leaves its spec, and its
	// generation, alone.
	bp := *obs.blueprint.DeepCopy()
	name := extv1beta1.WarmPoolMemberName(pool.Name)
	sb := &sandboxv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    pool.Namespace,
			Name:         name,
			GenerateName: extv1beta1.WarmPoolMemberGenerateName(pool.Name),
			Labels: map[string]string{
				sandboxv1beta1.WarmPoolSandboxLabel:        sandboxv1beta1.NameHash(pool.Name),
				sandboxv1beta1.SandboxTemplateRefHashLabel: sandboxv1beta1.NameHash(tplName),
				sandboxv1beta1.SandboxTemplateHashLabel:    obs.hash,
				sandboxv1beta1.LaunchTypeLabel:             extv1beta1.LaunchTypeWarm,
				sandboxv1beta1.CreatedByLabel:              extv1beta1.CreatedByController,
			},
			// The Pod takes the Sandbox's name: the annotation the Sandbox controller would
			// otherwise patch in once the Pod exists comes with the creation.
			Annotations: map[string]string{sandboxv1beta1.SandboxTemplateRefAnnotation: tplName, sandboxv1beta1.PodNameAnnotation: name},
		},
		Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: bp},
	}
	if err := controllerutil.SetControllerReference(pool, sb, r.scheme); err != nil {
		return nil, fmt.Errorf("setting SandboxWarmPool %s as the controller of its member: %w", pool.Name, err)
	}
	return sb, nil
}

// isStale reports whether sb was built from another template than template, or does not have
// the spec the pool builds from the blueprint whose staleness hash is hash (blueprint.Fresh: the
// spec itself is hashed, and a spec someone changed is stale). Only the blueprint counts: a
// change of the template's labels or annotations never makes a member stale.
func isStale(sb *sandboxv1beta1.Sandbox, template, hash string) bool {
	return !blueprint.Fresh(sb, hash) || sb.Labels[sandboxv1beta1.SandboxTemplateHashLabel] != hash ||
		sb.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel] != sandboxv1beta1.NameHash(template)
}

// createMembers creates n members in slow-start batches, announcing them to the expectations
// first so that the next pass waits until the cache shows them.
func (r *Reconciler) createMembers(ctx context.Context, pool *extv1beta1.SandboxWarmPool, obs *observed, n int) error {
	if n <= 0 {
		return nil
	}
	key := poolKey(pool)
	r.expectations.ExpectCreations(key, n)
	created, attempted, err := slowStartBatch(n, func(int) error {
		sb, err := r.createMember(ctx, pool, obs)
		if err != nil {
			r.expectations.CreationFailed(key)
			return err
		}
		r.expectations.CreationSucceeded(key, sb.UID)
		return nil
	})
	// The creations a failed batch kept from being sent will never be observed.
	for range n - attempted {
		r.expectations.CreationFailed(key)
	}
	if err != nil {
		obs.record(corev1.EventTypeWarning, EventFailedCreate, "Create",
			fmt.Sprintf("Created %d of %d members: %v", created, n, err))
		return fmt.Errorf("creating members of SandboxWarmPool %s (%d of %d created): %w", pool.Name, created, n, err)
	}
	return nil
}

// nameAttempts is how many random names createMember tries before it gives up, as the API server
// does for a generateName.
const nameAttempts = 8

// createMember creates one new member, under another random name when one is taken.
func (r *Reconciler) createMember(ctx context.Context, pool *extv1beta1.SandboxWarmPool, obs *observed) (*sandboxv1beta1.Sandbox, error) {
	for attempt := 1; ; attempt++ {
		sb, err := r.newSandbox(pool, obs)
		if err != nil {
			return nil, err
		}
		err = r.client.Create(ctx, sb, client.FieldOwner(FieldManager))
		if err == nil || !apierrors.IsAlreadyExists(err) || attempt == nameAttempts {
			return sb, err
		}
	}
}

// deleteMembers deletes the planned members in slow-start batches. Each delete is conditional on
// the member's UID and resourceVersion as this pass saw them: a member a claim bound in the
// meantime has a newer resourceVersion, so the delete fails and the bound sandbox is left alone.
// skipped counts such members: they are still there, so the creations the plan made room for by
// deleting them must wait for the next pass.
func (r *Reconciler) deleteMembers(ctx context.Context, pool *extv1beta1.SandboxWarmPool, obs *observed, dels []deletion) (skipped int, err error) {
	if len(dels) == 0 {
		return 0, nil
	}
	key := poolKey(pool)
	var mu sync.Mutex
	var changed []string
	deleted, _, err := slowStartBatch(len(dels), func(i int) error {
		sb := dels[i].member.sandbox
		r.expectations.ExpectDeletion(key, sb.UID)
		uid, rv := sb.UID, sb.ResourceVersion
		err := r.client.Delete(ctx, sb, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone already, or changed since this pass read it (a claim may have bound it):
			// nothing to delete now; the change's own event brings the pool back.
			r.expectations.DeletionObserved(key, sb.UID)
			mu.Lock()
			changed = append(changed, sb.Name)
			mu.Unlock()
			return nil
		default:
			r.expectations.DeletionObserved(key, sb.UID)
			return fmt.Errorf("deleting member %s: %w", sb.Name, err)
		}
	})
	if len(changed) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Members changed before they could be deleted", "members", changed)
	}
	if err != nil {
		obs.record(corev1.EventTypeWarning, EventFailedDelete, "Delete",
			fmt.Sprintf("Deleted %d of %d members: %v", deleted, len(dels), err))
		return len(changed), fmt.Errorf("deleting members of SandboxWarmPool %s: %w", pool.Name, err)
	}
	return len(changed), nil
}

// slowStartBatch calls fn(0), ..., fn(count-1) in batches of 1, 2, 4, ... calls running in
// parallel, and stops after the first batch in which a call failed. It returns how many calls
// succeeded, how many were made, and the errors of the failed batch. Starting small keeps a pool
// whose creates all fail (a quota, a bad template) from sending hundreds of doomed requests.
func slowStartBatch(count int, fn func(i int) error) (succeeded, attempted int, err error) {
	for batch := min(1, count); batch > 0; batch = min(2*batch, count-attempted) {
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			wg.Go(func() { errs[i] = fn(attempted + i) })
		}
		wg.Wait()
		attempted += batch
		for _, e := range errs {
			if e == nil {
				succeeded++
			}
		}
		if err := errors.Join(errs...); err != nil {
			return succeeded, attempted, err
		}
	}
	return succeeded, attempted, nil
}
