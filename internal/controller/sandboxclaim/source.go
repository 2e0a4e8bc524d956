package sandboxclaim

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/blueprint"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
)

// source is where a claim's sandbox comes from: spec.warmPoolRef's pool (warm, or cold from its
// template) or spec.sandboxTemplateRef's template (cold).
type source struct {
	// pool is the claim's warm pool; nil for a claim that names a template.
	pool *extv1beta1.SandboxWarmPool
	// template is the template of the pool, or the one the claim names.
	template *extv1beta1.SandboxTemplate
}

// poolName is the claim's warm pool's name, "" for a claim that names a template.
func (s *source) poolName() string {
	if s.pool == nil {
		return ""
	}
	return s.pool.Name
}

// resolveSource reads the claim's pool and template from the cache. A missing one is a failure
// (WarmPoolNotFound, TemplateNotFound); its creation enqueues the claim again.
func (r *Reconciler) resolveSource(ctx context.Context, claim *extv1beta1.SandboxClaim) (*source, *failure, error) {
	src := &source{}
	templateName := ""
	switch {
	case claim.Spec.WarmPoolRef != nil:
		pool := &extv1beta1.SandboxWarmPool{}
		name := claim.Spec.WarmPoolRef.Name
		if found, err := r.getCached(ctx, claim.Namespace, name, pool); err != nil || !found {
			return nil, fail(extv1beta1.ClaimReasonWarmPoolNotFound,
				"SandboxWarmPool %s not found in namespace %s; create it or point spec.warmPoolRef at an existing pool", name, claim.Namespace), err
		}
		src.pool = pool
		templateName = pool.Spec.SandboxTemplateRef.Name
	case claim.Spec.SandboxTemplateRef != nil:
		templateName = claim.Spec.SandboxTemplateRef.Name
	default:
		return nil, fail(extv1beta1.ClaimReasonTemplateNotFound,
			"Claim names neither a warm pool nor a template; set spec.warmPoolRef or spec.sandboxTemplateRef"), nil
	}
	tpl := &extv1beta1.SandboxTemplate{}
	if found, err := r.getCached(ctx, claim.Namespace, templateName, tpl); err != nil || !found {
		if src.pool != nil {
			return nil, fail(extv1beta1.ClaimReasonTemplateNotFound,
				"SandboxTemplate %s of SandboxWarmPool %s not found in namespace %s; create it", templateName, src.pool.Name, claim.Namespace), err
		}
		return nil, fail(extv1beta1.ClaimReasonTemplateNotFound,
			"SandboxTemplate %s not found in namespace %s; create it or point spec.sandboxTemplateRef at an existing template", templateName, claim.Namespace), err
	}
	src.template = tpl
	return src, nil, nil
}

// getCached reads name from the cache into obj; found is false when it does not exist.
func (r *Reconciler) getCached(ctx context.Context, ns, name string, obj client.Object) (found bool, err error) {
	err = r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %T %s: %w", obj, name, err)
	}
	return true, nil
}

// templateHashExpiry is how long a template's hash is kept after it was last used.
const templateHashExpiry = 10 * time.Minute

// templateHashes caches blueprint.Hash of each template's blueprint by template UID and
// generation, so a burst of claims hashes a pod spec once, not once per claim.
type templateHashes struct {
	hashes *inflight.Store[types.UID, generationHash]
}

type generationHash struct {
	generation int64
	hash       string
}

func newTemplateHashes(clk clock.PassiveClock) *templateHashes {
	return &templateHashes{hashes: inflight.NewStore[types.UID, generationHash](clk, templateHashExpiry)}
}

// of returns the staleness hash of the blueprint tpl gives, the sandbox-template-hash of its
// fresh pool members.
func (h *templateHashes) of(tpl *extv1beta1.SandboxTemplate) (hash string) {
	if tpl.UID == "" {
		return hashOf(tpl)
	}
	h.hashes.Update(tpl.UID, func(gh *generationHash, _ time.Duration, found bool) inflight.Action {
		if !found || gh.generation != tpl.Generation {
			*gh = generationHash{generation: tpl.Generation, hash: hashOf(tpl)}
		}
		hash = gh.hash
		return inflight.Touch
	})
	return hash
}

// hashOf is the hash of the blueprint tpl gives.
func hashOf(tpl *extv1beta1.SandboxTemplate) string {
	bp := blueprint.FromTemplate(tpl)
	return blueprint.Hash(&bp)
}
