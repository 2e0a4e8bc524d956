package sandboxclaim

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/provenance"
)

// Warm path tuning.
const (
	// maxBindAttempts is how many members one pass tries to bind, each failing with a conflict
	// (another controller bound it, or it changed since the cache saw it), before the claim
	// starts cold.
	maxBindAttempts = 5
	// reservedRetry is how soon a claim that found every member reserved by this process's other
	// workers looks again: those binds finish in milliseconds, and a failed one frees its member.
	reservedRetry = 25 * time.Millisecond
)

// acquireWarm implements spec.warmPoolRef's warm path: it binds a ready, fresh member of the
// claim's pool, if there is one. It reports whether the pass is settled (bound, or waiting for a
// member other workers hold); false sends the claim down the cold path.
func (r *Reconciler) acquireWarm(ctx context.Context, claim *extv1beta1.SandboxClaim, src *source, obs *observed) (bool, error) {
	if src.pool.DeletionTimestamp != nil {
		// Its members are being garbage-collected.
		return false, nil
	}
	cands, err := r.candidates(ctx, claim.Namespace, src)
	if err != nil {
		return false, err
	}
	seed := claimSeed(claim)
	hash := r.hashes.of(src.template)
	for range maxBindAttempts {
		cand, ok, wait := r.reservations.Take(cands, seed)
		if !ok {
			if wait {
				obs.wait(reservedRetry)
			}
			return wait, nil
		}
		if !blueprint.Fresh(cand, hash) {
			// The index said otherwise a moment ago; bind only what is checked now.
			r.reservations.Settle(cand, inflight.Lost)
			continue
		}
		sb, err := r.bind(ctx, claim, cand, src.template)
		switch {
		case err != nil:
			r.reservations.Settle(cand, inflight.Failed)
			return false, err
		case sb == nil:
			r.reservations.Settle(cand, inflight.Lost)
			continue
		}
		r.reservations.Settle(cand, inflight.Done)
		now := r.clock.Now()
		r.memory.expect(claim.UID, sb.Name)
		r.timeline.bound(claim.UID, now)
		obs.bind(sb)
		obs.acquired = &acquisition{launchType: extv1beta1.LaunchTypeWarm, template: src.template.Name,
			warmPool: src.pool.Name, ready: isSandboxReady(sb), at: now}
		obs.events = append(obs.events, status.Event{Related: sb, Type: corev1.EventTypeNormal, Reason: EventSandboxAdopted, Action: "Bind",
			Note: fmt.Sprintf("Bound Sandbox %s from SandboxWarmPool %s", sb.Name, src.pool.Name)})
		return true, nil
	}
	return false, nil
}

// candidates lists, from the cache's index and without copying them, the members of the claim's
// pool that are Ready, not being deleted and fresh: built from the current blueprint of the
// current template. They are sorted by name, so claimSeed spreads claims over them the same way
// in every process. The caller must not change them.
func (r *Reconciler) candidates(ctx context.Context, ns string, src *source) ([]*sandboxv1beta1.Sandbox, error) {
	list := &sandboxv1beta1.SandboxList{}
	key := indexer.ReadyWarmPoolMemberValue(src.pool.UID, r.hashes.of(src.template))
	if err := r.client.List(ctx, list, client.InNamespace(ns), client.MatchingFields{indexer.ReadyWarmPoolMemberKey: key},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the ready members of SandboxWarmPool %s: %w", src.pool.Name, err)
	}
	return freshMembers(list.Items, src.pool, src.template.Name), nil
}

// freshMembers returns the members of pool built from template, sorted by name. The index
// already matched them; each is checked again here, because the claim binds only a member whose
// provenance it can tell: the pool (by kind, group and UID) is its controller and it is not being
// deleted. acquireWarm checks the spec of the one it binds (blueprint.Fresh), and the bind patch
// carries the resourceVersion read here, so the member bound is the one checked.
func freshMembers(items []sandboxv1beta1.Sandbox, pool *extv1beta1.SandboxWarmPool, template string) []*sandboxv1beta1.Sandbox {
	refHash := sandboxv1beta1.NameHash(template)
	out := make([]*sandboxv1beta1.Sandbox, 0, len(items))
	for i := range items {
		sb := &items[i]
		if sb.Labels[sandboxv1beta1.SandboxTemplateRefHashLabel] == refHash && sb.DeletionTimestamp == nil &&
			provenance.ControlledBy(sb, provenance.SandboxWarmPool, pool.UID) {
			out = append(out, sb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// claimSeed is where a claim starts looking among the candidates: a hash of its UID, so
// concurrent claims, in this process or another replica, start at different members.
func claimSeed(claim *extv1beta1.SandboxClaim) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(claim.UID)) // hash.Hash never returns an error
	return h.Sum32()
}

// isSandboxReady reports whether sb's Ready condition is True.
func isSandboxReady(sb *sandboxv1beta1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
}
