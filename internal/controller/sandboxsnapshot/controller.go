package sandboxsnapshot

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/controller/status"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
)

// Name is the controller's name in logs, metrics and events.
const Name = "sandboxsnapshot"

// FieldManager is the field manager of every write of the controller.
const FieldManager = "kubox-sandboxsnapshot-controller"

// Finalizer keeps a SandboxSnapshot until its files are deleted from its node.
const Finalizer = "extensions.agents.x-k8s.io/sandboxsnapshot-files"

// Event reasons.
const (
	EventTaken            = "SnapshotTaken"
	EventCheckpointFailed = "CheckpointFailed"
	// EventFilesNotDeleted: a deleted SandboxSnapshot's copy in the snapshot store could not be
	// deleted (its node is gone, and no other kubox-node answered) and is left behind.
	EventFilesNotDeleted = "FilesNotDeleted"
	// EventRetentionExpired: the controller deleted a SandboxSnapshot outside its spec.retention.
	EventRetentionExpired = "RetentionExpired"
)

// notRunningRetry is how soon a snapshot of a Sandbox that is not running yet is looked at again.
const notRunningRetry = 2 * time.Second

// deletionGiveUp is how long a deleted SandboxSnapshot waits for a kubox-node to delete its copy
// from the snapshot store once the node that took it is gone; then the finalizer goes, and a
// Warning event names the copy left behind.
const deletionGiveUp = 15 * time.Minute

// Reconciler reconciles SandboxSnapshots.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader // Nodes, which the controller does not cache
	recorder  events.EventRecorder
	status    *status.Writer
	clock     clock.PassiveClock
	nodes     nodeapi.Client
}

// NewReconciler returns a Reconciler taking snapshots through nodes (nodeapi.NotConfigured: it
// cannot, and says so).
func NewReconciler(c client.Client, apiReader client.Reader, recorder events.EventRecorder, clk clock.PassiveClock, nodes nodeapi.Client) *Reconciler {
	return &Reconciler{client: c, apiReader: apiReader, recorder: recorder, clock: clk, nodes: nodes,
		status: status.NewWriter(c, recorder, FieldManager, "SandboxSnapshot")}
}

// Setup registers the controller with mgr.
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.ControllerConfiguration, opts controller.Options) error {
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(Name), clock.RealClock{},
		nodeapi.FromConfig(cfg.Controllers.Sandbox.Memory))
	err := ctrl.NewControllerManagedBy(mgr).Named(Name).For(&extv1beta1.SandboxSnapshot{}).
		Watches(&extv1beta1.SandboxSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.countedWith)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.restoredFrom)).
		WithOptions(opts).Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return RegisterMetrics(mgr.GetClient())
}

// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxsnapshots,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxsnapshots/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxsnapshots/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxclaims,verbs=get;list;watch

// Reconcile takes one snapshot, records the nodes that hold a copy of a taken one (nodes.go),
// deletes it once it falls outside its spec.retention, or deletes its files once it is deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	snap := &extv1beta1.SandboxSnapshot{}
	if err := r.client.Get(ctx, req.NamespacedName, snap); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if snap.DeletionTimestamp != nil {
		return r.finalize(ctx, snap)
	}
	deleted, next, err := r.retain(ctx, snap)
	if err != nil || deleted {
		return ctrl.Result{}, err
	}
	switch c := meta.FindStatusCondition(snap.Status.Conditions, extv1beta1.SnapshotConditionReady); {
	case c != nil && c.Status == metav1.ConditionTrue:
		return r.recordCopies(ctx, snap, next) // taken once; looked at again for its maxAge and its copies
	case c != nil && c.Reason == extv1beta1.SnapshotReasonCheckpointFailed:
		return ctrl.Result{RequeueAfter: next}, nil // failed for good; looked at again for its maxAge
	}
	if !controllerutil.ContainsFinalizer(snap, Finalizer) {
		base := snap.DeepCopy()
		controllerutil.AddFinalizer(snap, Finalizer)
		if err := r.client.Patch(ctx, snap, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager)); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer of SandboxSnapshot %s: %w", snap.Name, err)
		}
	}
	sb, pod, why, err := r.runningPod(ctx, snap)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pod == nil {
		return ctrl.Result{RequeueAfter: notRunningRetry}, r.setReady(ctx, snap, metav1.ConditionFalse, extv1beta1.SnapshotReasonSandboxNotRunning, why)
	}
	src, err := r.sourceClaim(ctx, sb)
	if err != nil {
		return ctrl.Result{}, err
	}
	snap.Status.SourceClaim = src
	return ctrl.Result{RequeueAfter: next}, r.take(ctx, snap, pod, ownVolumeMounts(sb))
}

// sourceClaim is the claim whose own settings (spec.env, spec.secretFiles) sb holds, recorded in
// status.sourceClaim so that no other claim starts from the snapshot: the claim sb serves
// (ClaimUIDLabel, its controller) when it sets either, assumed to set both while it cannot be
// read; otherwise the one the snapshot sb started from holds (a fork of a claimed sandbox holds
// that claim's settings too), assumed unknown when that snapshot is gone; nil for none.
func (r *Reconciler) sourceClaim(ctx context.Context, sb *sandboxv1beta1.Sandbox) (*extv1beta1.SnapshotSourceClaim, error) {
	if uid := types.UID(sb.Labels[sandboxv1beta1.ClaimUIDLabel]); uid != "" {
		src := &extv1beta1.SnapshotSourceClaim{UID: string(uid), Env: true, SecretFiles: true}
		if ref := metav1.GetControllerOf(sb); ref != nil && ref.Kind == "SandboxClaim" && ref.UID == uid {
			src.Name = ref.Name
			claim := &extv1beta1.SandboxClaim{}
			switch err := r.client.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: ref.Name}, claim); {
			case err == nil && claim.UID == uid:
				src.Env, src.SecretFiles = len(claim.Spec.Env) > 0, len(claim.Spec.SecretFiles) > 0
			case err != nil && !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("reading SandboxClaim %s, which Sandbox %s serves: %w", ref.Name, sb.Name, err)
			}
		}
		if src.Env || src.SecretFiles {
			return src, nil
		}
	}
	ref := sb.Spec.SnapshotRef
	if ref == nil {
		return nil, nil
	}
	from := &extv1beta1.SandboxSnapshot{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: ref.Name}, from); {
	case apierrors.IsNotFound(err):
		return &extv1beta1.SnapshotSourceClaim{Env: true, SecretFiles: true}, nil
	case err != nil:
		return nil, fmt.Errorf("reading SandboxSnapshot %s, which Sandbox %s started from: %w", ref.Name, sb.Name, err)
	}
	return from.Status.SourceClaim.DeepCopy(), nil
}

// ownVolumeMounts are the mounts of the sandbox's own PersistentVolumeClaims (its
// volumeClaimTemplates, each the Pod volume of its name) in the containers that run (sidecars
// too, not init containers that ended): their content goes into the snapshot, since a Sandbox
// started from it gets new, empty claims of its own. Claims the pod template names itself are
// shared, mounted as they are by the Sandboxes started from the snapshot, and not copied. Read
// from the Sandbox's pod template, which its Pod was made from (the cached Pod keeps no
// containers or volumes).
func ownVolumeMounts(sb *sandboxv1beta1.Sandbox) []*nodev1.VolumeMount {
	own := map[string]bool{}
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		own[vct.Metadata.Name] = true
	}
	spec := &sb.Spec.PodTemplate.Spec
	// An init container that ended has no mounts left to copy; a sidecar runs on.
	running := slices.DeleteFunc(slices.Clone(spec.InitContainers), func(c corev1.Container) bool {
		return c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways
	})
	var out []*nodev1.VolumeMount
	for _, c := range append(running, spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if own[m.Name] {
				out = append(out, &nodev1.VolumeMount{Container: c.Name, Path: filepath.Clean(m.MountPath)})
			}
		}
	}
	return out
}

// runningPod returns the snapshot's Sandbox and its Running Pod, or a nil Pod and why there is
// none.
func (r *Reconciler) runningPod(ctx context.Context, snap *extv1beta1.SandboxSnapshot) (*sandboxv1beta1.Sandbox, *corev1.Pod, string, error) {
	name := snap.Spec.SandboxRef.Name
	sb := &sandboxv1beta1.Sandbox{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: name}, sb); {
	case apierrors.IsNotFound(err):
		return nil, nil, fmt.Sprintf("Sandbox %s does not exist", name), nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("reading Sandbox %s: %w", name, err)
	}
	podName := sb.Annotations[sandboxv1beta1.PodNameAnnotation]
	if podName == "" {
		podName = sb.Name
	}
	pod := &corev1.Pod{}
	switch err := r.client.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: podName}, pod); {
	case apierrors.IsNotFound(err):
		return nil, nil, fmt.Sprintf("Sandbox %s has no Pod (is it suspended?)", name), nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("reading Pod %s of Sandbox %s: %w", podName, name, err)
	}
	if !metav1.IsControlledBy(pod, sb) {
		return nil, nil, fmt.Sprintf("Pod %s is not Sandbox %s's", podName, name), nil
	}
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return nil, nil, fmt.Sprintf("Pod %s of Sandbox %s is %s, not Running", podName, name, pod.Status.Phase), nil
	}
	return sb, pod, "", nil
}

// take asks kubox-node to checkpoint pod without stopping it, with the content of volumes, and
// records the outcome (without kubox-node, nodeapi.ErrNotConfigured: a failure for good).
func (r *Reconciler) take(ctx context.Context, snap *extv1beta1.SandboxSnapshot, pod *corev1.Pod, volumes []*nodev1.VolumeMount) error {
	kind, what := nodev1.Kind_KIND_FULL, "Checkpointed"
	if snap.FilesystemOnly() {
		kind, what = nodev1.Kind_KIND_FILESYSTEM, "Saved the files of"
	}
	s, err := r.nodes.Checkpoint(ctx, pod.Status.HostIP, &nodev1.CheckpointRequest{Namespace: pod.Namespace, Pod: pod.Name,
		PodUid: string(pod.UID), Snapshot: string(snap.UID), LeaveRunning: true, Kind: kind, CopyVolumeMounts: volumes})
	if err != nil {
		return r.fail(ctx, snap, pod, err)
	}
	snap.Status.Snapshot = nodeapi.Status(pod.Spec.NodeName, s)
	snap.Status.SourcePodUID = string(pod.UID)
	snap.Status.Store, snap.Status.Nodes = storeOf(s), []string{pod.Spec.NodeName}
	msg := fmt.Sprintf("%s Pod %s of Sandbox %s on node %s: %.1f MiB in %.2f s, verified; it kept running", what,
		pod.Name, snap.Spec.SandboxRef.Name, pod.Spec.NodeName, float64(s.GetSizeBytes())/(1<<20), s.GetDuration().AsDuration().Seconds())
	return r.setReady(ctx, snap, metav1.ConditionTrue, extv1beta1.SnapshotReasonTaken, msg,
		status.Event{Related: pod, Type: corev1.EventTypeNormal, Reason: EventTaken, Action: "Checkpoint", Note: msg})
}

// fail records a checkpoint that will not be tried again.
func (r *Reconciler) fail(ctx context.Context, snap *extv1beta1.SandboxSnapshot, pod *corev1.Pod, err error) error {
	msg := fmt.Sprintf("Pod %s of Sandbox %s could not be checkpointed: %v. Delete this SandboxSnapshot and create another to try again",
		pod.Name, snap.Spec.SandboxRef.Name, err)
	return r.setReady(ctx, snap, metav1.ConditionFalse, extv1beta1.SnapshotReasonCheckpointFailed, msg,
		status.Event{Related: pod, Type: corev1.EventTypeWarning, Reason: EventCheckpointFailed, Action: "Checkpoint", Note: msg})
}

// setReady writes the Ready condition, with the rest of the status as it is in snap, then emits
// evs; a Ready condition that already says the same is not written again. The write is
// status.WriteNow: a pass that took a snapshot either records it or fails and is retried with
// backoff (kubox-node answers the retried request, the same snapshot UID, with the snapshot it
// took).
func (r *Reconciler) setReady(ctx context.Context, snap *extv1beta1.SandboxSnapshot, st metav1.ConditionStatus, reason, msg string, evs ...status.Event) error {
	want := *snap.Status.DeepCopy()
	if c := meta.FindStatusCondition(snap.Status.Conditions, extv1beta1.SnapshotConditionReady); c == nil ||
		c.Status != st || c.Reason != reason || c.Message != msg {
		meta.SetStatusCondition(&want.Conditions, metav1.Condition{Type: extv1beta1.SnapshotConditionReady, Status: st,
			Reason: reason, Message: msg, ObservedGeneration: snap.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now())})
	}
	_, err := status.WriteNow(ctx, r.status, snap, &snap.Status, want, evs...)
	return err
}
