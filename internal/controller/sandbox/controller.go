package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/metrics"
)

// Name is the controller's name in logs, metrics and events.
const Name = "sandbox"

// FieldManager is the field manager of every object the controller writes.
const FieldManager = "kubox-sandbox-controller"

// Event reasons.
const (
	// EventMultiplePods: more than one Pod is controlled by the Sandbox.
	EventMultiplePods = "MultiplePods"
	// EventExpired: shutdownTime passed; the Pod and Service were deleted.
	EventExpired = "SandboxExpired"
	// EventAdopted: a pre-existing Pod, Service or PVC was adopted.
	EventAdopted = "Adopted"
	// EventAdoptionRefused: a Pod, Service or PVC holds the name of a warm-pool member's or a
	// claim's child, and kubox did not create it; it is never adopted.
	EventAdoptionRefused = "AdoptionRefused"
)

// Reconciler reconciles Sandboxes.
type Reconciler struct {
	client        client.Client
	apiReader     client.Reader
	scheme        *runtime.Scheme
	recorder      events.EventRecorder
	clock         clock.PassiveClock
	clusterDomain string
	agent         AgentOptions
	pods          *inflight.Versions // Pods' versions this process patched from
	sandboxes     *inflight.Versions // Sandboxes' versions this process wrote from
	status        *status.Writer
	activity      ActivityReader // the idle policy's questions to the sandboxes' agents
	egressProxy   string         // HTTP_PROXY of sandboxes with spec.egress
	nodes         nodeapi.Client // kubox-node, for spec.suspendPolicy.keepMemory (nodeapi.NotConfigured by default)
	usage         UsageCounter   // usage metering, for status.usage (NoUsage by default)
	usageInterval time.Duration  // the least time between two status.usage writes of a running sandbox
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// NewReconciler returns a Reconciler. c reads from the informer cache; apiReader reads from the
// API server and is used only for objects the label-scoped cache cannot see (adoption, and the
// agent token Secrets, which are not cached). agent configures kubox-agent for the sandboxes
// that ask for it.
func NewReconciler(c client.Client, apiReader client.Reader, scheme *runtime.Scheme, recorder events.EventRecorder,
	clk clock.PassiveClock, clusterDomain string, agent AgentOptions) *Reconciler {
	return &Reconciler{client: c, apiReader: apiReader, scheme: scheme, recorder: recorder, clock: clk,
		clusterDomain: clusterDomain, agent: agent, pods: inflight.NewVersions(clk), sandboxes: inflight.NewVersions(clk),
		status: status.NewWriter(c, recorder, FieldManager, "Sandbox"), activity: newAgentActivity(agent.TokenKey),
		nodes: nodeapi.NotConfigured(), usage: NoUsage()}
}

// SetupWithManager registers the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := metrics.RegisterSuspendMetrics(); err != nil {
		return fmt.Errorf("registering the %s metrics: %w", Name, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&sandboxv1beta1.Sandbox{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		WithOptions(opts).
		Complete(r)
}

// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods;services;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxsnapshots,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list
// The admission policies of config/admission let only a requester allowed create on
// sandboxes/provenance give a Pod, Service, PVC or Secret an owner reference to a Sandbox, or give
// a Sandbox one to a SandboxWarmPool or SandboxClaim: the controllers make those objects.
// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes/provenance,verbs=create

// Reconcile brings one Sandbox's children to its spec and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sb := &sandboxv1beta1.Sandbox{}
	if err := r.client.Get(ctx, req.NamespacedName, sb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.sandboxes.Behind(sb.UID, sb.ResourceVersion) {
		// The cache shows the Sandbox as it was before this process's own write (the pod-name
		// annotation, the status): a pass now would compute from the old status and meet a
		// conflict. The written version's event requeues it.
		return ctrl.Result{}, nil
	}
	if sb.DeletionTimestamp != nil {
		return ctrl.Result{}, r.finalize(ctx, sb)
	}
	if err := r.syncRetentionFinalizer(ctx, sb); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.syncMemoryFinalizer(ctx, sb); err != nil {
		return ctrl.Result{}, err
	}
	if r.expired(sb) {
		return r.expire(ctx, sb)
	}
	obs := &observed{}
	// The idle policy first: when it suspends the sandbox, this pass deletes the Pod.
	idleAfter, err := r.checkIdle(ctx, sb, obs)
	switch {
	case errors.Is(err, errIdleConflict):
		return ctrl.Result{RequeueAfter: status.ConflictRetry}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	// A failed PVC phase keeps the Pod from being created (it would mount a claim that is not
	// the Sandbox's), but the Pod is still observed and the Service reconciled, so one child's
	// error does not hide what the others show (the Pod's IPs) from the status.
	pvcErr := r.reconcilePVCs(ctx, sb, obs)
	podPhase := r.reconcilePod
	if pvcErr != nil {
		podPhase = r.observePods
	}
	podErr := podPhase(ctx, sb, obs)
	obs.err = errors.Join(pvcErr, podErr, r.reconcileService(ctx, sb, obs))
	_, statusAfter, err := r.writeStatus(ctx, sb, obs)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case obs.err != nil:
		return ctrl.Result{}, obs.err
	}
	return ctrl.Result{RequeueAfter: sooner(sooner(statusAfter, obs.requeueAfter), sooner(r.untilExpiry(sb), idleAfter))}, nil
}

// sooner is the earlier of two requeue delays, where 0 means none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// writeStatus computes the status from obs and writes it when it changed, then emits the pass's
// events (package status). It also returns how soon the Sandbox must be looked at again because of
// its status: after a conflict, or when a write of mere progress waits (progressDeferral; the
// outcome is then Unchanged, since the status in the API server is left as it is).
func (r *Reconciler) writeStatus(ctx context.Context, sb *sandboxv1beta1.Sandbox, obs *observed) (status.Outcome, time.Duration, error) {
	now := metav1.NewTime(r.clock.Now())
	st := computeStatus(sb, obs, r.clusterDomain, now)
	usageAfter := r.summarizeUsage(sb, &st, now.Time)
	r.status.Emit(sb, obs.actions...)
	if wait := progressDeferral(sb, &st, now.Time); wait > 0 && len(obs.events) == 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Deferring a status write of the Pod's progress", "for", wait)
		return status.Unchanged, sooner(wait, usageAfter), nil
	}
	before := sb.Status.DeepCopy()
	wasReady := meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	evs := append(obs.events, transitionEvents(&sb.Status, &st)...)
	base := sb.ResourceVersion
	out, err := status.Write(ctx, r.status, sb, &sb.Status, st, evs...)
	if out != status.Written {
		return out, sooner(out.RequeueAfter(), usageAfter), err
	}
	r.sandboxes.Wrote(sb.UID, base)
	countSuspends(sb, before, &st, now.Time)
	if !wasReady && meta.IsStatusConditionTrue(st.Conditions, sandboxv1beta1.SandboxConditionReady) && sb.Generation == 1 {
		// Generation 1: the spec never changed since creation, so this is the first time it is
		// Ready, not a resume.
		metrics.ObserveCreationLatency(sb.Namespace, sb.Labels[sandboxv1beta1.LaunchTypeLabel],
			sb.Annotations[sandboxv1beta1.SandboxTemplateRefAnnotation], now.Sub(sb.CreationTimestamp.Time))
	}
	return out, usageAfter, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshalling a patch of plain maps cannot fail: %v", err))
	}
	return b
}
