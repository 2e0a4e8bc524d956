package sandboxclaim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/provenance"
)

// cacheLagRetry is how soon a claim waiting for the cache to show its own sandbox is looked at
// again, should the watch event that normally wakes it not come.
const cacheLagRetry = time.Second

// observeSandbox finds the Sandbox the claim controls, through the cache's controller-UID index:
// a claim's sandbox is the one whose controller owner reference is the claim, whichever process
// bound or created it, so a controller restarted between binding a sandbox and writing the
// claim's status finds that sandbox and never binds another.
//
// When the index shows none but the claim had one (this process just bound or created it, or the
// status names it), the claim waits for the cache while the write is recent, and otherwise asks
// the API server: a sandbox that is gone leaves the claim Ready=False/SandboxMissing rather than
// giving it another.
func (r *Reconciler) observeSandbox(ctx context.Context, claim *extv1beta1.SandboxClaim, obs *observed) error {
	list := &sandboxv1beta1.SandboxList{}
	if err := r.client.List(ctx, list, client.InNamespace(claim.Namespace),
		client.MatchingFields{indexer.ControllerUIDKey: string(claim.UID)}); err != nil {
		return fmt.Errorf("listing the Sandboxes of SandboxClaim %s: %w", claim.Name, err)
	}
	// The index matched the UID only; a reference of another kind carrying the claim's UID
	// makes no sandbox of the claim's.
	owned := slices.DeleteFunc(list.Items, func(sb sandboxv1beta1.Sandbox) bool {
		return !provenance.ControlledBy(&sb, provenance.SandboxClaim, claim.UID)
	})
	if len(owned) > 0 {
		return r.keepOne(ctx, claim, owned, obs)
	}
	name, recent := r.memory.expected(claim.UID)
	if name == "" {
		name = claim.Status.Sandbox.Name
	}
	switch {
	case name == "":
		if c := meta.FindStatusCondition(claim.Status.Conditions, extv1beta1.ClaimConditionReady); c != nil &&
			c.Reason == extv1beta1.ClaimReasonSandboxMissing {
			// The claim's sandbox went, and its name left the status with it (computeStatus):
			// this reason is the claim's only record that it had one. It gets no other.
			obs.fail(&failure{reason: c.Reason, message: c.Message})
		}
		return nil
	case recent:
		obs.wait(cacheLagRetry)
		return nil
	}
	sb, err := r.readOwn(ctx, claim, name)
	switch {
	case err != nil:
		return err
	case sb != nil:
		obs.bind(sb)
	default:
		obs.fail(fail(extv1beta1.ClaimReasonSandboxMissing,
			"Sandbox %s, bound to the claim, no longer exists; delete the claim and create a new one", name))
	}
	obs.sandboxName = name
	r.memory.observed(claim.UID)
	return nil
}

// readOwn reads the Sandbox called name from the API server: the cache does not show it as the
// claim's. It returns nil when it does not exist or the claim does not control it.
func (r *Reconciler) readOwn(ctx context.Context, claim *extv1beta1.SandboxClaim, name string) (*sandboxv1beta1.Sandbox, error) {
	sb := &sandboxv1beta1.Sandbox{}
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: name}, sb)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Sandbox %s of SandboxClaim %s: %w", name, claim.Name, err)
	case !provenance.ControlledBy(sb, provenance.SandboxClaim, claim.UID):
		return nil, nil
	}
	return sb, nil
}

// keepOne picks the claim's sandbox among those it controls. There is one, unless two controller
// replicas (a failed leader election, an overlapping handover) each gave the claim one. Then the
// claim keeps the one its status names, and deletes the others only once the status names the
// one it keeps: a status write carries the claim's resourceVersion, so a replica with a stale
// view of the claim cannot name another, and the sandbox a client was told about is never the
// one deleted.
func (r *Reconciler) keepOne(ctx context.Context, claim *extv1beta1.SandboxClaim, sbs []sandboxv1beta1.Sandbox, obs *observed) error {
	r.memory.observed(claim.UID)
	named := claim.Status.Sandbox.Name
	keep := find(sbs, named)
	if keep == nil && named != "" {
		// The status names a sandbox the cache does not show as the claim's (yet).
		own, err := r.readOwn(ctx, claim, named)
		if err != nil {
			return err
		}
		if own != nil {
			sbs = append(sbs, *own)
			keep = own
		}
	}
	if keep == nil {
		keep = oldest(sbs)
	}
	obs.bind(keep.DeepCopy())
	if len(sbs) == 1 {
		return nil
	}
	if keep.Name != named {
		// Name it in the status first (this pass's write); delete the others next pass.
		obs.requeueSoon(cacheLagRetry)
		return nil
	}
	for i := range sbs {
		sb := &sbs[i]
		if sb.Name == keep.Name || sb.DeletionTimestamp != nil {
			continue
		}
		if err := r.client.Delete(ctx, sb, client.Preconditions{UID: &sb.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Sandbox %s, a second sandbox of SandboxClaim %s: %w", sb.Name, claim.Name, err)
		}
		obs.events = append(obs.events, status.Event{Related: sb, Type: corev1.EventTypeWarning, Reason: EventDuplicateSandboxDeleted,
			Action: "Delete", Note: fmt.Sprintf("Deleted Sandbox %s: the claim already has Sandbox %s (two controllers acquired one each)", sb.Name, keep.Name)})
	}
	return nil
}

// find returns the sandbox called name among sbs, or nil.
func find(sbs []sandboxv1beta1.Sandbox, name string) *sandboxv1beta1.Sandbox {
	for i := range sbs {
		if name != "" && sbs[i].Name == name {
			return &sbs[i]
		}
	}
	return nil
}

// oldest returns the sandbox created first, by name among equals: every replica picks the same.
func oldest(sbs []sandboxv1beta1.Sandbox) *sandboxv1beta1.Sandbox {
	sort.Slice(sbs, func(i, j int) bool {
		if !sbs[i].CreationTimestamp.Equal(&sbs[j].CreationTimestamp) {
			return sbs[i].CreationTimestamp.Before(&sbs[j].CreationTimestamp)
		}
		return sbs[i].Name < sbs[j].Name
	})
	return &sbs[0]
}
