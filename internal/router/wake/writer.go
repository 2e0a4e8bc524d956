package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// FieldManager is the field manager of the router's own writes to Sandboxes: the last-activity
// annotation, and the resume of a sandbox it wakes.
const FieldManager = "kubox-router"

// Writer builds and sends every lifecycle patch of the router. Its methods act with the router's
// own client and FieldManager; SetMode, SetClaimShutdown and SetShutdownTime act with the client
// they are given (E2B's control API and the dashboard pass the caller's, so the caller's RBAC
// decides). Every patch is a JSON
// merge patch; those guarded by metadata.uid fail on another object recreated under the name.
type Writer struct {
	kube client.Client
}

// NewWriter returns the Writer that acts as the router with kube.
func NewWriter(kube client.Client) *Writer { return &Writer{kube: kube} }

// Resume is the one write of a wake: it sets operatingMode Running, removes
// kubox.dev/suspended-by and sets kubox.dev/last-activity to at, on the Sandbox with sb's UID only.
// It returns the generation of the patched Sandbox.
func (w *Writer) Resume(ctx context.Context, sb *sandboxv1beta1.Sandbox, at time.Time) (int64, error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid": sb.UID,
			"annotations": map[string]any{
				sandboxv1beta1.SuspendedByAnnotation:  nil,
				sandboxv1beta1.LastActivityAnnotation: FormatActivity(at),
			},
		},
		"spec": map[string]any{"operatingMode": sandboxv1beta1.SandboxOperatingModeRunning},
	})
	if err != nil {
		return 0, err
	}
	out := &sandboxv1beta1.Sandbox{}
	out.Namespace, out.Name = sb.Namespace, sb.Name
	if err := w.kube.Patch(ctx, out, mergePatch(patch), client.FieldOwner(FieldManager)); err != nil {
		return 0, err
	}
	if out.UID != sb.UID {
		return 0, errors.New("the Sandbox was replaced by another of the same name")
	}
	return out.Generation, nil
}

// LastActivity sets the kubox.dev/last-activity annotation of Sandbox ns/name to at. A merge
// patch of one annotation: it conflicts with nothing, and a Sandbox deleted meanwhile is
// NotFound rather than recreated.
func (w *Writer) LastActivity(ctx context.Context, ns, name string, at time.Time) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, sandboxv1beta1.LastActivityAnnotation, FormatActivity(at))
	sb := &sandboxv1beta1.Sandbox{}
	sb.Namespace, sb.Name = ns, name
	return w.kube.Patch(ctx, sb, mergePatch(patch), client.FieldOwner(FieldManager))
}

// SetMode sets the operatingMode of the Sandbox with sb's UID as as, and returns the generation
// that patch made.
func SetMode(ctx context.Context, as client.Client, sb *sandboxv1beta1.Sandbox, mode sandboxv1beta1.SandboxOperatingMode) (int64, error) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": sb.UID}, "spec": map[string]any{"operatingMode": mode}})
	patched := sb.DeepCopy()
	if err := as.Patch(ctx, patched, mergePatch(patch)); err != nil {
		return 0, err
	}
	return patched.Generation, nil
}

// SetClaimShutdown sets the shutdownTime and shutdownPolicy of the SandboxClaim with cl's UID to
// lc's, as as.
func SetClaimShutdown(ctx context.Context, as client.Client, cl *extv1beta1.SandboxClaim, lc *extv1beta1.ClaimLifecycle) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": cl.UID},
		"spec": map[string]any{"lifecycle": map[string]any{"shutdownTime": lc.ShutdownTime, "shutdownPolicy": lc.ShutdownPolicy}}})
	return as.Patch(ctx, cl, mergePatch(patch))
}

// SetShutdownTime sets when obj shuts down to at, as as, on the object with obj's UID: a
// Sandbox's spec.shutdownTime, or a SandboxClaim's spec.lifecycle.shutdownTime (the dashboard's
// extend).
func SetShutdownTime(ctx context.Context, as client.Client, obj client.Object, at metav1.Time) error {
	spec := map[string]any{"shutdownTime": at}
	if _, isClaim := obj.(*extv1beta1.SandboxClaim); isClaim {
		spec = map[string]any{"lifecycle": spec}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": obj.GetUID()}, "spec": spec})
	return as.Patch(ctx, obj, mergePatch(patch))
}

func mergePatch(b []byte) client.Patch { return client.RawPatch(types.MergePatchType, b) }
