package sandboxclaim

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/controller/status"
	"github.com/kubox-dev/kubox/internal/metrics"
)

// Name is the controller's name in logs, metrics and events.
const Name = "sandboxclaim"

// FieldManager is the field manager of every object the controller writes.
const FieldManager = "kubox-sandboxclaim-controller"

// Event reasons.
const (
	// EventSandboxAdopted: a ready member of the claim's warm pool was bound to the claim.
	EventSandboxAdopted = "SandboxAdopted"
	// EventSandboxProvisioned: a Sandbox was created for the claim (cold start).
	EventSandboxProvisioned = "SandboxProvisioned"
	// EventClaimExpired: the claim reached its expiry; its shutdownPolicy was applied.
	EventClaimExpired = "ClaimExpired"
	// EventDuplicateSandboxDeleted: the claim had two sandboxes, acquired by two controller
	// replicas at once; the one its status does not name was deleted.
	EventDuplicateSandboxDeleted = "DuplicateSandboxDeleted"
)

// Reconciler reconciles SandboxClaims.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	scheme    *runtime.Scheme
	recorder  events.EventRecorder
	clock     clock.PassiveClock
	tracer    trace.Tracer
	domains   metadataDomains
	status    *status.Writer

	reservations *inflight.Reservations[*sandboxv1beta1.Sandbox]
	memory       *claimMemory
	timeline     *timeline
	hashes       *templateHashes
	// annotate: write agent-sandbox's observability annotations on bound claims (annotations.go).
	annotate bool
	// optional holds the annotations and the Events back while claims wait (yield.go); nil:
	// they are written at once.
	optional *optionalWrites
	// agents delivers claims' settings to their sandboxes' agents (settings.go).
	agents agentSettings
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// NewReconciler returns a Reconciler. c reads from the informer cache; apiReader reads from the
// API server, only when the cache cannot say whether a claim's sandbox still exists.
// allowedLabelDomains and allowedAnnotationDomains are the domains a label or an annotation of a
// claim's additionalPodMetadata may have whatever its template.
func NewReconciler(c client.Client, apiReader client.Reader, scheme *runtime.Scheme, recorder events.EventRecorder,
	clk clock.PassiveClock, tp trace.TracerProvider, allowedLabelDomains, allowedAnnotationDomains []string) *Reconciler {
	return &Reconciler{
		client: c, apiReader: apiReader, scheme: scheme, recorder: recorder, clock: clk,
		tracer:       tp.Tracer(TracerName),
		domains:      metadataDomains{labels: allowedLabelDomains, annotations: allowedAnnotationDomains},
		status:       status.NewWriter(c, recorder, FieldManager, "SandboxClaim"),
		reservations: newReservations(clk),
		memory:       newClaimMemory(clk),
		timeline:     newTimeline(clk),
		hashes:       newTemplateHashes(clk),
		agents:       newAgentClient(nil),
	}
}

// Setup registers the SandboxClaim controller and its metrics with mgr, with cfg's settings and
// the global OpenTelemetry tracer provider (a no-op unless the binary configures an exporter).
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.ControllerConfiguration, opts controller.Options) error {
	if err := metrics.RegisterClaimMetrics(); err != nil {
		return fmt.Errorf("registering the %s metrics: %w", Name, err)
	}
	opts.MaxConcurrentReconciles = int(ptr.Deref(cfg.Controllers.SandboxClaim.Workers, configv1alpha1.DefaultClaimWorkers))
	optional := newOptionalWrites()
	var recorder events.EventRecorder = yieldingRecorder{EventRecorder: mgr.GetEventRecorder(Name), q: optional}
	if !ptr.Deref(cfg.Controllers.SandboxClaim.Events, true) {
		recorder = status.NoEvents()
	}
	r := NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), recorder,
		clock.RealClock{}, otel.GetTracerProvider(),
		cfg.Controllers.SandboxClaim.AllowedLabelDomains, cfg.Controllers.SandboxClaim.AllowedAnnotationDomains)
	r.annotate = ptr.Deref(cfg.Controllers.SandboxClaim.ObservabilityAnnotations, true)
	r.optional = optional
	if err := mgr.Add(optional); err != nil {
		return fmt.Errorf("adding the %s controller's optional writes: %w", Name, err)
	}
	if f := cfg.Agent.TokenKeyFile; f != "" {
		key, err := contract.LoadAgentTokenKey(f)
		if err != nil {
			return fmt.Errorf("agent.tokenKeyFile: %w", err)
		}
		r.agents = newAgentClient(key)
	}
	if err := r.SetupWithManager(mgr, opts); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return nil
}

// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxclaims,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxwarmpools;sandboxtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconcile gives one claim a sandbox, mirrors its readiness and enforces its lifecycle.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	mark := r.optional.begin(req.NamespacedName)
	defer func() {
		// A pass that looks again within cacheLagRetry is mid-way: the claim still waits.
		again := err == nil && res.RequeueAfter > 0 && res.RequeueAfter <= cacheLagRetry
		r.optional.settle(req.NamespacedName, mark, again)
	}()
	claim := &extv1beta1.SandboxClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, claim); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if claim.DeletionTimestamp != nil || r.memory.cacheBehind(claim.UID, claim.ResourceVersion) {
		// Being deleted: its sandbox goes with it. Cache behind this controller's own status
		// write: the newer version's event comes next.
		return ctrl.Result{}, nil
	}
	ctx, span := r.startSpan(ctx, claim)
	defer span.End()
	r.timeline.reconciled(claim)

	obs := &observed{}
	for _, phase := range []func(context.Context, *extv1beta1.SandboxClaim, *observed) error{
		r.observeSandbox, r.reconcileLifecycle, r.acquireSandbox, r.deliverSettings,
	} {
		if err := phase(ctx, claim, obs); err != nil {
			obs.err = err
			break
		}
	}
	if obs.state == stateDeleted {
		return ctrl.Result{}, nil
	}
	res, err = r.writeStatus(ctx, claim, obs)
	if obs.err != nil {
		span.SetStatus(codes.Error, obs.err.Error())
		return ctrl.Result{}, obs.err
	}
	if err == nil && obs.retry != nil {
		return ctrl.Result{}, obs.retry // the status says why; back off
	}
	return res, err
}

// acquireSandbox gives a claim that has none, and may have one, a sandbox: a warm pool member
// when the claim names a pool and every field fits a warm member (claimFitsWarm: one row per
// field in claimFields), and one created cold otherwise, or when the pool has no ready fresh
// member. The fields are first checked against the template (validateClaimFields).
func (r *Reconciler) acquireSandbox(ctx context.Context, claim *extv1beta1.SandboxClaim, obs *observed) error {
	if obs.state != stateUnbound {
		return nil
	}
	src, f, err := r.resolveSource(ctx, claim)
	if err != nil {
		return err
	}
	if f != nil {
		obs.fail(f)
		return nil
	}
	if f := validateClaimFields(&claim.Spec, src.template, r.domains); f != nil {
		obs.fail(f)
		return nil
	}
	if src.pool != nil && claimFitsWarm(&claim.Spec, src.template) {
		if settled, err := r.acquireWarm(ctx, claim, src, obs); err != nil || settled {
			return err
		}
	}
	if err := r.acquireCold(ctx, claim, src, obs); err != nil {
		return err
	}
	if a := obs.acquired; a != nil {
		metrics.CountClaimCreation(metrics.ClaimCreation{Namespace: claim.Namespace, Template: a.template,
			LaunchType: a.launchType, WarmPool: a.warmPool, Ready: a.ready, CreatedBy: claim.Labels[sandboxv1beta1.CreatedByLabel]})
	}
	return nil
}

// writeStatus computes the claim's status from obs and writes it when it changed; once written, it
// emits the pass's events (package status) and, on the claim's first Ready, its latency metrics.
// A conflict means a newer claim: it is looked at again shortly.
func (r *Reconciler) writeStatus(ctx context.Context, claim *extv1beta1.SandboxClaim, obs *observed) (ctrl.Result, error) {
	if obs.sandbox != nil && isSandboxReady(obs.sandbox) {
		r.timeline.sandboxReady(claim.UID)
	}
	st := computeStatus(claim, obs, metav1.NewTime(r.clock.Now()))
	wasReady := isReady(claim.Status.Conditions)
	base := claim.ResourceVersion
	wctx, span := r.tracer.Start(ctx, spanWriteStatus)
	out, err := status.Write(wctx, r.status, claim, &claim.Status, st, obs.events...)
	span.End()
	switch out {
	case status.Conflict:
		return ctrl.Result{RequeueAfter: out.RequeueAfter()}, nil
	case status.Gone:
		return ctrl.Result{}, nil
	case status.Written:
		r.memory.statusWritten(claim.UID, base)
		if !wasReady && isReady(st.Conditions) {
			r.recordFirstReady(claim, obs.sandbox, r.clock.Now())
		}
	}
	if err == nil && r.annotate && st.Sandbox.Name != "" {
		err = r.annotateOrDefer(ctx, claim, st.Sandbox.Name)
	}
	return ctrl.Result{RequeueAfter: obs.requeueAfter}, err
}
