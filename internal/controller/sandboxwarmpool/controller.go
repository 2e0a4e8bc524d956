package sandboxwarmpool

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/controller/status"
)

// Name is the controller's name in logs, metrics and events.
const Name = "sandboxwarmpool"

// FieldManager is the field manager of every object the controller writes.
const FieldManager = "kubox-sandboxwarmpool-controller"

// changedMemberRetry is how soon a pool looks again after a member it meant to delete changed
// first (deleteMembers), should the member's own event not come first.
const changedMemberRetry = time.Second

// Event reasons. WarmPoolNotProgressing and WarmPoolProgressing are agent-sandbox's.
const (
	// EventMembersUnschedulable: members cannot be scheduled; the pool holds them (Warning).
	EventMembersUnschedulable = "WarmPoolNotProgressing"
	// EventMembersSchedulable: no member is unschedulable any more.
	EventMembersSchedulable = "WarmPoolProgressing"
	// EventProgressDeadlineExceeded: the pool made no progress for progressDeadlineSeconds (Warning).
	EventProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// EventReplacedNotReady: members not Ready past the grace period were deleted to be replaced.
	EventReplacedNotReady = "ReplacedNotReadyMembers"
	// EventDeletedStale: members built from an older template were deleted (Recreate, RollingUpdate).
	EventDeletedStale = "DeletedStaleMembers"
	// EventDeletedTampered: members whose spec someone changed after the pool created them were
	// deleted (whatever the update strategy).
	EventDeletedTampered = "DeletedTamperedMembers"
	// EventAdopted: an orphaned member was adopted.
	EventAdopted = "Adopted"
	// EventFailedCreate: creating members failed (Warning).
	EventFailedCreate = "FailedCreate"
	// EventFailedDelete: deleting members failed (Warning).
	EventFailedDelete = "FailedDelete"
)

// Settings are the controller's settings from the configuration file.
type Settings struct {
	// MaxBatchSize is the most members one pass of a pool creates.
	MaxBatchSize int32
	// ReadinessGracePeriod is how long a member may stay not Ready before it is replaced.
	ReadinessGracePeriod time.Duration
	// UnschedulableRecheckInterval is how often a pool holding unschedulable members is looked at.
	UnschedulableRecheckInterval time.Duration
	// ReplenishDelay is how long a pool holds its refill after a claim takes a member; 0 does not.
	ReplenishDelay time.Duration
	// MaxRefillRate is the most members per second a pool creates; 0 does not pace them.
	MaxRefillRate float64
	// StatusBatchPeriod is how long a pool's counting status changes wait to be written together;
	// 0 writes each at once (statusbatch.go).
	StatusBatchPeriod time.Duration
}

// SettingsFrom returns the settings of cfg, which has its defaults set.
func SettingsFrom(cfg *configv1alpha1.ControllerConfiguration) Settings {
	wp := cfg.Controllers.SandboxWarmPool
	s := Settings{
		MaxBatchSize:                 ptr.Deref(wp.MaxBatchSize, configv1alpha1.DefaultWarmPoolMaxBatchSize),
		ReadinessGracePeriod:         configv1alpha1.DefaultWarmPoolReadinessGracePeriod,
		UnschedulableRecheckInterval: configv1alpha1.DefaultWarmPoolUnschedulableRecheckInterval,
		ReplenishDelay:               configv1alpha1.DefaultWarmPoolReplenishDelay,
		StatusBatchPeriod:            configv1alpha1.DefaultWarmPoolStatusBatchPeriod,
		MaxRefillRate:                float64(ptr.Deref(wp.MaxRefillRate, configv1alpha1.DefaultWarmPoolMaxRefillRate)),
	}
	if wp.ReadinessGracePeriod != nil {
		s.ReadinessGracePeriod = wp.ReadinessGracePeriod.Duration
	}
	if wp.UnschedulableRecheckInterval != nil {
		s.UnschedulableRecheckInterval = wp.UnschedulableRecheckInterval.Duration
	}
	if wp.ReplenishDelay != nil {
		s.ReplenishDelay = wp.ReplenishDelay.Duration
	}
	if wp.StatusBatchPeriod != nil {
		s.StatusBatchPeriod = wp.StatusBatchPeriod.Duration
	}
	return s
}

// Reconciler reconciles SandboxWarmPools.
type Reconciler struct {
	client       client.Client
	scheme       *runtime.Scheme
	clock        clock.PassiveClock
	expectations *inflight.Expectations
	settings     Settings
	status       *status.Writer
	refill       *refillGate
	statusBatch  *statusBatch
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// NewReconciler returns a Reconciler. c reads from the informer cache; exp must be the
// expectations the controller's Sandbox event handler feeds (SetupWithManager wires both).
func NewReconciler(c client.Client, scheme *runtime.Scheme, recorder events.EventRecorder, clk clock.PassiveClock,
	exp *inflight.Expectations, settings Settings) *Reconciler {
	return &Reconciler{client: c, scheme: scheme, clock: clk, expectations: exp, settings: settings,
		status:      status.NewWriter(c, recorder, FieldManager, "SandboxWarmPool"),
		refill:      newRefillGate(clk, settings.ReplenishDelay, settings.MaxRefillRate),
		statusBatch: newStatusBatch(settings.StatusBatchPeriod)}
}

// Setup registers the SandboxWarmPool controller with mgr, configured by cfg.
func Setup(mgr ctrl.Manager, cfg *configv1alpha1.ControllerConfiguration, opts controller.Options) error {
	opts.MaxConcurrentReconciles = int(ptr.Deref(cfg.Controllers.SandboxWarmPool.Workers, configv1alpha1.DefaultWarmPoolWorkers))
	r := NewReconciler(mgr.GetClient(), mgr.GetScheme(), mgr.GetEventRecorder(Name), clock.RealClock{},
		inflight.NewExpectations(clock.RealClock{}, inflight.DefaultExpectationsTimeout), SettingsFrom(cfg))
	if err := r.SetupWithManager(mgr, opts); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", Name, err)
	}
	return nil
}

// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxwarmpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxwarmpools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxwarmpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=extensions.agents.x-k8s.io,resources=sandboxtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=agents.x-k8s.io,resources=sandboxes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile keeps one pool's members at spec.replicas, ready and up to date, and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &extv1beta1.SandboxWarmPool{}
	if err := r.client.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.Forget(req.String())
			r.refill.forget(req.String())
			r.statusBatch.forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pool.DeletionTimestamp != nil {
		// The members go with the pool, through their owner references.
		return ctrl.Result{}, nil
	}
	// The expectations are read before the cache: read after, they could count as observed a
	// member the informer delivered between the two reads, that this pass's members lack, and
	// the pass would create its replacement twice.
	satisfied, expiresIn := r.expectations.Satisfied(poolKey(pool))
	obs, err := r.observe(ctx, pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !satisfied {
		// Earlier creates or deletes are not in the cache yet: acting now would count them
		// wrong. Their events bring the pool back; the timer is for an event that never comes.
		obs.wakeIn(expiresIn)
	} else {
		for _, phase := range []func(context.Context, *extv1beta1.SandboxWarmPool, *observed) error{
			r.adoptOrphans, r.manageMembers,
		} {
			if err := phase(ctx, pool, obs); err != nil {
				obs.errs = append(obs.errs, err)
			}
		}
	}
	if err := r.writeStatus(ctx, pool, obs); err != nil {
		return ctrl.Result{}, err
	}
	if len(obs.errs) > 0 {
		return ctrl.Result{}, errors.Join(obs.errs...)
	}
	return ctrl.Result{RequeueAfter: obs.requeueAfter}, nil
}

// manageMembers plans the pass (plan.go) and carries it out: deletions first, then creations.
func (r *Reconciler) manageMembers(ctx context.Context, pool *extv1beta1.SandboxWarmPool, obs *observed) error {
	maxSurge, maxUnavailable := pool.Spec.UpdateStrategy.RollingUpdateBounds(pool.Spec.DesiredReplicas())
	p := makePlan(planInput{
		replicas:       int(pool.Spec.DesiredReplicas()),
		strategy:       pool.Spec.UpdateStrategy.StrategyType(),
		maxSurge:       int(maxSurge),
		maxUnavailable: int(maxUnavailable),
		maxBatch:       int(r.settings.MaxBatchSize),
		templateFound:  obs.template != nil,
		members:        obs.members,
		now:            r.clock.Now(),
		grace:          pool.Spec.ReadinessGracePeriod(r.settings.ReadinessGracePeriod),
	})
	obs.wakeIn(p.graceEndsIn)
	if len(p.held) > 0 {
		obs.wakeIn(r.settings.UnschedulableRecheckInterval)
	}
	skipped, err := r.deleteMembers(ctx, pool, obs, p.deletions)
	if err != nil {
		return err
	}
	if skipped > 0 {
		// A member the plan deleted changed first and is still there: creating now would break
		// maxSurge (or replicas). Its change's event, or this wake-up, brings the next pass.
		obs.wakeIn(changedMemberRetry)
		return nil
	}
	obs.recordDeletions(p.deletions, pool.Spec.ReadinessGracePeriod(r.settings.ReadinessGracePeriod), pool.Spec.UpdateStrategy.StrategyType())
	create, retryIn := r.refill.admit(poolKey(pool), p.create, countMembers(pool, obs).ready)
	obs.wakeIn(retryIn)
	return r.createMembers(ctx, pool, obs, create)
}

// writeStatus computes the status from obs and writes it when it changed; once written, it
// emits the pass's events and those of the condition changes it wrote (package status). The
// events of what the pass did (members adopted, deleted) are emitted first, whatever the write
// meets: a conflict would drop them for good, as no later pass does it again.
func (r *Reconciler) writeStatus(ctx context.Context, pool *extv1beta1.SandboxWarmPool, obs *observed) error {
	now := r.clock.Now()
	st, prog := computeStatus(pool, obs, now)
	obs.wakeIn(prog.deadlineIn)
	r.status.Emit(pool, statusEvents(obs.actions)...)
	evs := statusEvents(append(obs.events, conditionEvents(pool.Status, st, prog)...))
	key := poolKey(pool)
	if wait := r.statusBatch.wait(key, &pool.Status, &st, now); wait > 0 {
		if len(evs) == 0 {
			// Counting only (statusbatch.go): written with the changes that follow within the period.
			obs.wakeIn(wait)
			return nil
		}
		r.statusBatch.forget(key)
	}
	out, err := status.Write(ctx, r.status, pool, &pool.Status, st, evs...)
	obs.wakeIn(out.RequeueAfter())
	return err
}

func statusEvents(pes []poolEvent) []status.Event {
	evs := make([]status.Event, 0, len(pes))
	for _, e := range pes {
		evs = append(evs, status.Event{Type: e.eventType, Reason: e.reason, Action: e.action, Note: e.note})
	}
	return evs
}

// poolKey is the expectations key of pool.
func poolKey(pool *extv1beta1.SandboxWarmPool) string {
	return client.ObjectKeyFromObject(pool).String()
}
