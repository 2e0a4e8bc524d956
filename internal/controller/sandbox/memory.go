package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
)

// Event reasons of memory-preserving suspend (spec.suspendPolicy.keepMemory).
const (
	// EventMemoryKept: the suspend checkpointed the sandbox; EventMemoryNotKept: it could not.
	EventMemoryKept    = "MemoryKept"
	EventMemoryNotKept = "MemoryNotKept"
	// EventRestoreFailed: the Pod could not be restored from the snapshot; the sandbox was
	// suspended again.
	EventRestoreFailed = "RestoreFailed"
	// EventSnapshotNotDeleted: a memory snapshot the sandbox no longer uses could not be deleted
	// from its node; its files are left there.
	EventSnapshotNotDeleted = "SnapshotNotDeleted"
)

// WithMemory lets the controller keep sandboxes' memory across a suspend through nodes
// (nodeapi.NotConfigured: it cannot, and says so on the sandboxes that ask).
func (r *Reconciler) WithMemory(nodes nodeapi.Client) *Reconciler {
	r.nodes = nodes
	return r
}

// keepsMemory reports whether sb asks for its memory to be kept across a suspend.
func keepsMemory(sb *sandboxv1beta1.Sandbox) bool {
	return sb.Spec.SuspendPolicy != nil && sb.Spec.SuspendPolicy.KeepMemory
}

// MemorySnapshotFinalizer holds a Sandbox that keeps a memory snapshot (status.memory) until the
// snapshot is deleted from its node.
const MemorySnapshotFinalizer = "kubox.dev/memory-snapshot"

// syncMemoryFinalizer keeps MemorySnapshotFinalizer on a Sandbox exactly while it holds
// status.memory (keepMemory adds it before the checkpoint). Others never get it: no write.
func (r *Reconciler) syncMemoryFinalizer(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	return r.setFinalizer(ctx, sb, MemorySnapshotFinalizer, sb.Status.Memory != nil)
}

// deleteMemorySnapshot deletes the snapshot of a Sandbox being deleted from its node, then
// removes the finalizer; a node that is gone took the snapshot along.
func (r *Reconciler) deleteMemorySnapshot(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	if m := sb.Status.Memory; m != nil {
		if err := r.deleteFromNode(ctx, sb.Namespace, m); err != nil && !errors.Is(err, nodeapi.ErrNotConfigured) {
			return fmt.Errorf("deleting the memory snapshot %s of Sandbox %s from node %s: %w", m.Snapshot, sb.Name, m.NodeName, err)
		}
	}
	return r.setFinalizer(ctx, sb, MemorySnapshotFinalizer, false)
}

// dropMemory discards the memory snapshot of a sandbox that starts a fresh Pod although it holds
// one (resumed with keepMemory turned off): the snapshot is deleted from its node, then
// status.memory and MemoryKept are cleared (the finalizer goes on the next pass). A node that
// cannot delete it (kubox-node down or gone) does not hold the sandbox back: a Warning event
// names the files left behind.
func (r *Reconciler) dropMemory(ctx context.Context, sb *sandboxv1beta1.Sandbox) error {
	m := sb.Status.Memory
	if err := r.deleteFromNode(ctx, sb.Namespace, m); err != nil {
		r.recorder.Eventf(sb, nil, corev1.EventTypeWarning, EventSnapshotNotDeleted, "Resume",
			"Started afresh (keepMemory is off), but the memory snapshot %s could not be deleted from node %s: %v; "+
				"its files stay in kubox-node's snapshot folder %s/%s there", m.Snapshot, m.NodeName, err, sb.Namespace, m.Snapshot)
	}
	st := *sb.Status.DeepCopy()
	st.Memory = nil
	meta.RemoveStatusCondition(&st.Conditions, sandboxv1beta1.SandboxConditionMemoryKept)
	base := sb.ResourceVersion
	out, err := status.WriteNow(ctx, r.status, sb, &sb.Status, st)
	if err != nil {
		return fmt.Errorf("clearing the discarded memory snapshot of Sandbox %s: %w", sb.Name, err)
	}
	if out == status.Written {
		r.sandboxes.Wrote(sb.UID, base)
	}
	return nil
}

// deleteFromNode deletes the memory snapshot m from the node that holds it and from the snapshot
// store (nodeapi.DeleteEverywhere: through another node once that node is gone). When the node is
// gone and no kubox-node can delete the store's copy, the copy left is logged and the Sandbox is
// not held back. Without kubox-node (not configured) it reads nothing and returns
// nodeapi.ErrNotConfigured.
func (r *Reconciler) deleteFromNode(ctx context.Context, ns string, m *sandboxv1beta1.MemoryStatus) error {
	if !r.nodeAPI() {
		return nodeapi.ErrNotConfigured
	}
	err := nodeapi.DeleteEverywhere(ctx, r.apiReader, r.nodes, ns, m)
	if errors.Is(err, nodeapi.ErrNoSnapshotNode) {
		ctrl.LoggerFrom(ctx).Error(err, "Leaving a memory snapshot in the snapshot store", "snapshot", m.Snapshot, "node", m.NodeName)
		return nil
	}
	return err
}

// keepMemory checkpoints the running Pod of a sandbox being suspended and records the snapshot in
// status.memory, with MemoryKept, before the Pod is deleted: a crash in between loses nothing,
// since kubox-node answers the same request (the Pod's UID) with the snapshot it took. When the
// memory cannot be kept, MemoryKept=False says why and the suspend goes on without it.
func (r *Reconciler) keepMemory(ctx context.Context, sb *sandboxv1beta1.Sandbox, pod *corev1.Pod) error {
	if m := sb.Status.Memory; m != nil && (m.Snapshot == string(pod.UID) || restoringMemory(sb, pod)) {
		return nil // this Pod's snapshot is recorded, or the Pod, not yet restored from it, holds nothing newer
	}
	nodeAPI := r.nodeAPI()
	if nodeAPI {
		// Before the snapshot exists, so a deletion that follows always finds the finalizer.
		if err := r.setFinalizer(ctx, sb, MemorySnapshotFinalizer, true); err != nil {
			return err
		}
	}
	old := sb.Status.Memory
	cond := metav1.Condition{Type: sandboxv1beta1.SandboxConditionMemoryKept, ObservedGeneration: sb.Generation,
		LastTransitionTime: metav1.NewTime(r.clock.Now())}
	st := *sb.Status.DeepCopy()
	snap, err := r.checkpoint(ctx, nodeAPI, pod)
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, sandboxv1beta1.SandboxReasonCheckpointFailed
		cond.Message = fmt.Sprintf("The memory of Pod %s was not kept; suspended without it: %v", pod.Name, err)
		st.Memory = nil
	} else {
		cond.Status, cond.Reason = metav1.ConditionTrue, sandboxv1beta1.SandboxReasonCheckpointed
		cond.Message = fmt.Sprintf("Checkpointed Pod %s on node %s: %.1f MiB in %.2f s; the next Pod resumes from it",
			pod.Name, pod.Spec.NodeName, float64(snap.GetSizeBytes())/(1<<20), snap.GetDuration().AsDuration().Seconds())
		st.Memory = nodeapi.Status(pod.Spec.NodeName, snap)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	ev := status.Event{Related: pod, Type: corev1.EventTypeNormal, Reason: EventMemoryKept, Action: "Suspend", Note: cond.Message}
	if cond.Status != metav1.ConditionTrue {
		ev.Type, ev.Reason = corev1.EventTypeWarning, EventMemoryNotKept
	}
	base := sb.ResourceVersion
	// Now, not with the pass's status: the Pod is deleted next, and status.memory must be there first.
	out, err := status.WriteNow(ctx, r.status, sb, &sb.Status, st, ev)
	if err != nil {
		return fmt.Errorf("recording the memory snapshot of Sandbox %s: %w", sb.Name, err)
	}
	if out == status.Written {
		r.sandboxes.Wrote(sb.UID, base)
	}
	if old != nil && (sb.Status.Memory == nil || old.Snapshot != sb.Status.Memory.Snapshot) {
		r.deleteSnapshot(ctx, sb, old, pod.Status.HostIP)
	}
	return nil
}

// checkpoint asks the Pod's node for a snapshot that stops the Pod, named by the Pod's UID.
// Without kubox-node (nodeAPI false) the error says what is missing, whatever the Pod's phase.
func (r *Reconciler) checkpoint(ctx context.Context, nodeAPI bool, pod *corev1.Pod) (*nodev1.Snapshot, error) {
	switch {
	case !nodeAPI:
		return nil, nodeapi.ErrNotConfigured
	case pod.Status.Phase != corev1.PodRunning:
		return nil, fmt.Errorf("the Pod is %s, not Running: nothing runs to keep", pod.Status.Phase)
	}
	return r.nodes.Checkpoint(ctx, pod.Status.HostIP, &nodev1.CheckpointRequest{
		Namespace: pod.Namespace, Pod: pod.Name, PodUid: string(pod.UID), Snapshot: string(pod.UID)})
}

// deleteSnapshot removes a snapshot no Pod resumes from any more; a failure is logged (the node
// keeps a folder until someone deletes it); without kubox-node (not configured) it is not.
func (r *Reconciler) deleteSnapshot(ctx context.Context, sb *sandboxv1beta1.Sandbox, m *sandboxv1beta1.MemoryStatus, hostIP string) {
	if err := r.nodes.DeleteSnapshot(ctx, hostIP, sb.Namespace, m.Snapshot); err != nil && !errors.Is(err, nodeapi.ErrNotConfigured) {
		ctrl.LoggerFrom(ctx).Error(err, "Deleting a memory snapshot no Pod resumes from", "snapshot", m.Snapshot, "node", m.NodeName)
	}
}

// resumeFromMemory shapes the new Pod of a sandbox whose memory was kept so that it continues from
// the snapshot (checkpoint.ShapeForRestore; placeRestore then chooses its node), and reports
// whether it did.
func resumeFromMemory(sb *sandboxv1beta1.Sandbox, pod *corev1.Pod) bool {
	m := sb.Status.Memory
	if m == nil || !keepsMemory(sb) {
		return false
	}
	checkpoint.ShapeForRestore(pod, m.Image)
	return true
}

// snapshotRetry is how soon a sandbox waiting for its spec.snapshotRef to be Ready looks again.
const snapshotRetry = 2 * time.Second

// startFromSnapshot shapes the new Pod of a sandbox with spec.snapshotRef to start from that
// SandboxSnapshot (restored, or started afresh on the files of a Filesystem one; placeRestore then
// chooses its node), and returns the snapshot; or why the Pod cannot be created yet, which includes
// a snapshot that holds the settings of a claim other than the one the sandbox serves
// (extv1beta1.ClaimSettingsRefusal).
func (r *Reconciler) startFromSnapshot(ctx context.Context, sb *sandboxv1beta1.Sandbox, pod *corev1.Pod) (*sandboxv1beta1.MemoryStatus, string, error) {
	name := sb.Spec.SnapshotRef.Name
	snap := &extv1beta1.SandboxSnapshot{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: name}, snap); {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("SandboxSnapshot %s, which spec.snapshotRef names, does not exist", name), nil
	case err != nil:
		return nil, "", fmt.Errorf("reading SandboxSnapshot %s: %w", name, err)
	}
	s, why := extv1beta1.SnapshotReady(snap)
	if s == nil {
		return nil, fmt.Sprintf("SandboxSnapshot %s, which spec.snapshotRef names, is not Ready: %s", name, why), nil
	}
	_, poolMember := sb.Labels[sandboxv1beta1.WarmPoolSandboxLabel]
	if why := extv1beta1.ClaimSettingsRefusal(snap, types.UID(sb.Labels[sandboxv1beta1.ClaimUIDLabel]), poolMember); why != "" {
		return nil, why, nil
	}
	if snap.FilesystemOnly() {
		checkpoint.ShapeForFilesystemRestore(pod, s.Image)
	} else {
		checkpoint.ShapeForRestore(pod, s.Image)
	}
	return s, "", nil
}

// restoredCondition is MemoryKept=True/Restored once the Pod restored from status.memory is
// Ready, or nil.
func restoredCondition(sb *sandboxv1beta1.Sandbox, obs *observed) *metav1.Condition {
	m := sb.Status.Memory
	if m == nil || obs.pod == nil || obs.pod.Annotations[contract.RestoreImageAnnotation] != m.Image || !podConditionTrue(obs.pod, corev1.PodReady) {
		return nil
	}
	return &metav1.Condition{Type: sandboxv1beta1.SandboxConditionMemoryKept, Status: metav1.ConditionTrue,
		Reason:  sandboxv1beta1.SandboxReasonRestored,
		Message: fmt.Sprintf("Pod %s resumed from the memory snapshot %s taken %s", obs.pod.Name, m.Snapshot, m.TakenAt.UTC().Format(time.RFC3339))}
}

// restoring reports whether pod is being restored from a snapshot (status.memory, or the
// SandboxSnapshot of spec.snapshotRef) and has not been Ready yet.
func restoring(pod *corev1.Pod) bool {
	return pod.Annotations[contract.RestoreImageAnnotation] != "" && !podConditionTrue(pod, corev1.PodReady) &&
		!slices.ContainsFunc(pod.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.Ready })
}

// restoringMemory reports whether pod is being restored from sb's status.memory.
func restoringMemory(sb *sandboxv1beta1.Sandbox, pod *corev1.Pod) bool {
	m := sb.Status.Memory
	return m != nil && pod.Annotations[contract.RestoreImageAnnotation] == m.Image && restoring(pod)
}

// restoreDeadline is how long a Pod restored from a snapshot may stay Pending once it is scheduled:
// a sandbox the shim cannot restore is retried by the kubelet for ever (FailedCreatePodSandBox).
const restoreDeadline = 90 * time.Second

// restoreFailure says why the Pod being restored from a snapshot failed, or "" while it has not,
// with how long until its deadline.
func restoreFailure(pod *corev1.Pod, now time.Time) (string, time.Duration) {
	if !restoring(pod) || pod.DeletionTimestamp != nil {
		return "", 0
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		for _, st := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
			if t := st.Terminated; t != nil && t.Reason == "StartError" {
				return fmt.Sprintf("container %s: %s", cs.Name, t.Message), 0
			}
			if w := st.Waiting; w != nil && (w.Reason == "CreateContainerError" || w.Reason == "RunContainerError") {
				return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message), 0
			}
		}
	}
	if pod.Status.Phase != corev1.PodPending || pod.Spec.NodeName == "" {
		// Not scheduled yet: the scheduler, not the shim, holds it back, and its PodScheduled
		// condition, which the Sandbox shows, says why.
		return "", 0
	}
	if age := now.Sub(scheduledAt(pod)); age < restoreDeadline {
		return "", restoreDeadline - age
	}
	return fmt.Sprintf("the Pod did not start within %s (its events say why, such as FailedCreatePodSandBox)", restoreDeadline), 0
}

// scheduledAt is when pod was bound to its node (PodScheduled=True), or its creation when that is
// not known: the restore deadline runs from there, since a Pod waits for a fitting node first.
func scheduledAt(pod *corev1.Pod) time.Time {
	at := pod.CreationTimestamp.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && c.LastTransitionTime.After(at) {
			at = c.LastTransitionTime.Time
		}
	}
	return at
}

// snapshotRestoreFailure is the Ready message of a sandbox whose Pod could not start from the
// SandboxSnapshot of spec.snapshotRef. The Pod stays (a warm pool replaces its member after the
// readiness grace period); the spec must change for another try.
func snapshotRestoreFailure(sb *sandboxv1beta1.Sandbox, pod *corev1.Pod, why string) string {
	return fmt.Sprintf("Pod %s could not start from SandboxSnapshot %s: %s. A Sandbox that starts from a snapshot needs the "+
		"containers, volumes and mounts of the Sandbox it was taken of: a fork copies them; for a template, snapshot a sandbox "+
		"made from that template", pod.Name, sb.Spec.SnapshotRef.Name, why)
}

// failRestore suspends again a sandbox whose Pod could not be restored from its snapshot, keeping
// the snapshot and the volumes, and says why (MemoryKept=False/RestoreFailed, a Warning): resuming
// tries again; resuming with keepMemory false starts afresh without the memory.
func (r *Reconciler) failRestore(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed, why string) error {
	base := sb.DeepCopy()
	sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	sb.Annotations[sandboxv1beta1.SuspendedByAnnotation] = sandboxv1beta1.SuspendedByRestoreFailure
	if err := r.client.Patch(ctx, sb, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager)); err != nil {
		*sb = *base
		return fmt.Errorf("suspending Sandbox %s, whose Pod could not be restored: %w", sb.Name, err)
	}
	msg := fmt.Sprintf("Pod %s could not be restored from the memory snapshot %s: %s. The sandbox is suspended again with "+
		"its snapshot and volumes: resume it to try again, or set suspendPolicy.keepMemory to false and resume it without its memory",
		obs.pod.Name, sb.Status.Memory.Snapshot, why)
	st := *sb.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: sandboxv1beta1.SandboxConditionMemoryKept,
		Status: metav1.ConditionFalse, Reason: sandboxv1beta1.SandboxReasonRestoreFailed, Message: msg,
		ObservedGeneration: sb.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now())})
	rv := sb.ResourceVersion
	// Now, before the Pod is deleted: the failure is recorded with the snapshot it kept.
	out, err := status.WriteNow(ctx, r.status, sb, &sb.Status, st, status.Event{Related: obs.pod,
		Type: corev1.EventTypeWarning, Reason: EventRestoreFailed, Action: "Resume", Note: msg})
	if err != nil {
		return fmt.Errorf("recording the failed restore of Sandbox %s: %w", sb.Name, err)
	}
	if out == status.Written {
		r.sandboxes.Wrote(sb.UID, rv)
	}
	return r.suspendPod(ctx, sb, obs)
}
