package e2b

import (
	"context"
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// e2bPauseSnapshotLabel marks the Filesystem SandboxSnapshots E2B's pause takes (its value is
// the E2B sandbox ID): not E2B snapshots (listSnapshots leaves them out), but what a paused
// sandbox's files are kept in. Written by the caller, in the caller's namespace.
const e2bPauseSnapshotLabel = "e2b.kubox.dev/pause-of"

// e2bPauseRequest is E2B's SandboxPauseRequest: memory (keepMemory in the SDKs) defaults to true.
type e2bPauseRequest struct {
	Memory *bool `json:"memory,omitempty"`
}

// e2bPause is E2B's pause, which never drops the sandbox's files: first a Filesystem
// SandboxSnapshot of the running sandbox, as the caller, Ready before anything is suspended (a
// sandbox whose files cannot be kept is refused with 400 and goes on running); then one patch,
// as the caller, suspends the Sandbox with spec.snapshotRef on that snapshot and
// spec.suspendPolicy.keepMemory as asked. The Pod of the resume continues from the memory when
// the controller kept it (MemoryKept=True), else starts on the snapshot's files. The Sandbox's
// contract.E2BPauseAnnotation says which was kept. A paused sandbox answers 409, as E2B does.
func (a *API) e2bPause(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	var req e2bPauseRequest
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	keepMemory := req.Memory == nil || *req.Memory
	cl, sb, herr := a.e2bClaimSandbox(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	if sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		return httperr.Errorf(http.StatusConflict, "sandbox %s is already paused", cl.Name)
	}
	snap, herr := a.takePauseSnapshot(ctx, cl, sb)
	if herr != nil {
		return herr
	}
	previous := sb.Spec.SnapshotRef
	gen, herr := a.suspendKeeping(ctx, sb, snap.Name, keepMemory)
	if herr != nil {
		a.dropE2BSnapshot(ctx, snap)
		return herr
	}
	if herr := a.waitE2BSuspended(ctx, sb, gen); herr != nil {
		return herr // the suspend goes on, with the snapshot in spec.snapshotRef
	}
	if keepMemory {
		a.recordMemoryKept(ctx, sb)
	}
	a.dropPreviousPauseSnapshot(ctx, cl, previous, snap.Name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// takePauseSnapshot takes a Filesystem SandboxSnapshot of cl's running sandbox sb as the caller
// (RBAC: create on sandboxsnapshots, and create on sandboxes/connect, checked at admission),
// owned by cl so that killing the sandbox deletes it, and waits until it is Ready. One that
// cannot be taken is deleted, and the pause refused naming why and what to configure.
func (a *API) takePauseSnapshot(ctx context.Context, cl *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) (*extv1beta1.SandboxSnapshot, *httperr.Error) {
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace,
		GenerateName:    sandboxv1beta1.GeneratedNamePrefix(cl.Name, "-pause-"),
		Labels:          map[string]string{e2bPauseSnapshotLabel: cl.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim", Name: cl.Name, UID: cl.UID}}},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: sb.Name}, Type: extv1beta1.SnapshotTypeFilesystem}}
	if err := a.kube.Create(ctx, snap); err != nil {
		return nil, e2bKubeError(err, "creating the Filesystem SandboxSnapshot that pausing sandbox "+cl.Name+" keeps its files in")
	}
	ready, herr := a.waitE2BSnapshot(ctx, snap)
	if herr == nil {
		return ready, nil
	}
	why := herr.Msg
	if herr.Code == http.StatusConflict { // the controller's CheckpointFailed: it will never be taken
		got := &extv1beta1.SandboxSnapshot{}
		if err := a.kube.Get(ctx, objectKey(snap.Namespace, snap.Name), got); err == nil {
			if c := meta.FindStatusCondition(got.Status.Conditions, extv1beta1.SnapshotConditionReady); c != nil {
				why = "SandboxSnapshot " + snap.Name + ": " + c.Reason + ": " + c.Message
			}
		}
	}
	a.dropE2BSnapshot(ctx, snap)
	if herr.Code != http.StatusConflict {
		return nil, herr
	}
	return nil, httperr.Errorf(http.StatusBadRequest, "sandbox %s cannot be paused without losing its files, so it was not paused (%s). "+
		"E2B's pause keeps the root filesystem, which kubox keeps in a Filesystem SandboxSnapshot: that needs the sandbox under gVisor "+
		"(its SandboxTemplate's runtimeClassName with handler runsc) on a node with kubox-node (docs/checkpoint.md); "+
		"or kill the sandbox and keep what matters in the template's volumes", cl.Name, why)
}

// suspendKeeping suspends sb as the caller, guarded by its UID, in one patch: operatingMode
// Suspended, spec.snapshotRef on the Filesystem snapshot snapshot (so the files are there
// however the memory fares), spec.suspendPolicy.keepMemory, and contract.E2BPauseAnnotation
// filesystem (recordMemoryKept says memory once the controller kept it). It returns the
// generation that patch made.
func (a *API) suspendKeeping(ctx context.Context, sb *sandboxv1beta1.Sandbox, snapshot string, keepMemory bool) (int64, *httperr.Error) {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": sb.UID, "annotations": map[string]string{contract.E2BPauseAnnotation: contract.E2BPauseFilesystem}},
		"spec": map[string]any{"operatingMode": sandboxv1beta1.SandboxOperatingModeSuspended,
			"snapshotRef": map[string]string{"name": snapshot}, "suspendPolicy": map[string]bool{"keepMemory": keepMemory}},
	})
	patched := sb.DeepCopy()
	if err := a.kube.Patch(ctx, patched, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return 0, e2bKubeError(err, "suspending Sandbox "+sb.Name)
	}
	return patched.Generation, nil
}

// recordMemoryKept sets contract.E2BPauseAnnotation to memory on sb, as the caller, when its
// suspend kept the memory (sandboxv1beta1.MemoryNotKept); else it stays filesystem, and the
// reason is logged: the pause kept the files, the processes restart on resume.
func (a *API) recordMemoryKept(ctx context.Context, sb *sandboxv1beta1.Sandbox) {
	got, _ := a.deps.Sandbox(ctx, sb.Namespace, sb.Name)
	if got == nil || got.UID != sb.UID {
		return
	}
	if why := sandboxv1beta1.MemoryNotKept(got); why != "" {
		a.deps.Log.Info("E2B pause kept the files but not the memory", "sandbox", sb.Name, "namespace", sb.Namespace, "reason", why)
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": sb.UID,
		"annotations": map[string]string{contract.E2BPauseAnnotation: contract.E2BPauseMemory}}})
	if err := a.kube.Patch(ctx, sb.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		a.deps.Log.Warn("Recording that an E2B pause kept the memory failed", "sandbox", sb.Name, "namespace", sb.Namespace, "error", err)
	}
}

// dropPreviousPauseSnapshot deletes, as the caller, the snapshot an earlier pause of cl left in
// spec.snapshotRef (one labelled as cl's pause snapshot only), now that snapshot replaces it.
func (a *API) dropPreviousPauseSnapshot(ctx context.Context, cl *extv1beta1.SandboxClaim, previous *sandboxv1beta1.SnapshotReference, snapshot string) {
	if previous == nil || previous.Name == snapshot {
		return
	}
	old := &extv1beta1.SandboxSnapshot{}
	if err := a.kube.Get(ctx, objectKey(cl.Namespace, previous.Name), old); err != nil {
		if !apierrors.IsNotFound(err) {
			a.deps.Log.Warn("Reading an earlier E2B pause's SandboxSnapshot failed; it stays", "snapshot", previous.Name, "namespace", cl.Namespace, "error", err)
		}
		return
	}
	if old.Labels[e2bPauseSnapshotLabel] == cl.Name {
		a.dropE2BSnapshot(ctx, old)
	}
}
