package sandboxclaim

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// annotateOrDefer gives a bound claim agent-sandbox's observability annotations, once: the name
// of its sandbox and when the controller first saw it. It is one merge patch per claim, an
// optional write: the status write that bound the claim has been sent, and the patch waits
// behind the claims still waiting (yield.go), so no claim's way to its sandbox waits on it;
// clients that read the annotations (agent-sandbox's tooling) find them once the claims are
// served. Without a queue (a Reconciler not set up by Setup) it is sent at once. Settings:
// controllers.sandboxClaim.observabilityAnnotations.
func (r *Reconciler) annotateOrDefer(ctx context.Context, claim *extv1beta1.SandboxClaim, sandbox string) error {
	if r.optional == nil {
		return r.annotateBound(ctx, claim, sandbox)
	}
	if boundAnnotations(claim, sandbox, r.timeline.firstSeen(claim.UID)) != nil {
		r.deferAnnotations(claim)
	}
	return nil
}

// annotateBound sends the patch of the annotations claim lacks, if any.
func (r *Reconciler) annotateBound(ctx context.Context, claim *extv1beta1.SandboxClaim, sandbox string) error {
	patch := boundAnnotations(claim, sandbox, r.timeline.firstSeen(claim.UID))
	if patch == nil {
		return nil
	}
	base := claim.ResourceVersion
	err := r.client.Patch(ctx, claim, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("annotating SandboxClaim %s with its sandbox: %w", claim.Name, err))
	}
	// Until the cache shows the patched claim, a pass would see it unannotated and patch again:
	// passes over the version this patch replaced wait for the newer one, as after a status write.
	r.memory.statusWritten(claim.UID, base)
	return nil
}

// boundAnnotations returns the merge patch of the annotations claim lacks, bound to sandbox and
// first seen at seen (zero: not seen by this process, left out), or nil when it has them.
func boundAnnotations(claim *extv1beta1.SandboxClaim, sandbox string, seen time.Time) []byte {
	want := map[string]string{}
	if sandbox != "" && claim.Annotations[extv1beta1.SandboxNameAnnotation] != sandbox {
		want[extv1beta1.SandboxNameAnnotation] = sandbox
	}
	if _, ok := claim.Annotations[extv1beta1.ControllerFirstObservedAtAnnotation]; !ok && !seen.IsZero() {
		want[extv1beta1.ControllerFirstObservedAtAnnotation] = seen.UTC().Format(time.RFC3339Nano)
	}
	if len(want) == 0 {
		return nil
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
	if err != nil {
		panic(fmt.Sprintf("marshalling a map of strings cannot fail: %v", err))
	}
	return b
}
