package metrics

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// extensionsGroup is the API group of SandboxClaim and SandboxWarmPool. Owner references keep the
// version they were written with (v1alpha1 or v1beta1), so ownership is matched by group and kind.
const extensionsGroup = "extensions.agents.x-k8s.io"

var sandboxesDesc = prometheus.NewDesc(
	"agent_sandboxes",
	"Monitor the point-in-time number of sandboxes in the cluster.",
	[]string{"namespace", "ready_condition", "expired", "launch_type", "sandbox_template", "owned_by", "created_by", "operating_mode"},
	nil,
)

// SandboxCollector is agent_sandboxes: the Sandboxes in the informer cache, counted by their
// label values. The counts are kept as the informer changes the cache, not computed per scrape:
// a scrape that listed every Sandbox copied each out of the cache (1.1 KiB apiece, 13 MiB per
// scrape at 12,000 Sandboxes; docs/benchmarks.md). They cannot drift from the cache: every add,
// update and delete the informer applies is handed to the collector with the object before and
// after, so the counts move exactly as the cache does, and a resync (update with the same object)
// moves nothing.
type SandboxCollector struct {
	mu     sync.Mutex
	counts map[sandboxKey]int
	synced func() bool // whether the initial list has been counted
	log    logr.Logger
}

// NewSandboxCollector returns the collector of agent_sandboxes. It counts nothing until it is
// added as an event handler of the Sandbox informer (Register does so) and serves nothing until
// that handler has seen the informer's initial list.
func NewSandboxCollector(log logr.Logger) *SandboxCollector {
	return &SandboxCollector{counts: map[sandboxKey]int{}, synced: func() bool { return false }, log: log}
}

// WatchSandboxes adds c as an event handler of the Sandbox informer in informers (the
// manager's cache, which need not have started).
func (c *SandboxCollector) WatchSandboxes(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &sandboxv1beta1.Sandbox{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(c)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.synced = reg.HasSynced
	c.mu.Unlock()
	return nil
}

// Describe implements prometheus.Collector.
func (c *SandboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sandboxesDesc
}

// Collect implements prometheus.Collector. Before the initial list has been counted the family is
// left out of the scrape, as a partial count would read as Sandboxes gone.
func (c *SandboxCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced() {
		c.log.V(1).Info("Sandbox cache not synced yet: agent_sandboxes left out of this scrape")
		return
	}
	for k, n := range c.counts {
		ch <- prometheus.MustNewConstMetric(sandboxesDesc, prometheus.GaugeValue, float64(n),
			k.namespace, k.ready, k.expired, k.launchType, k.template, k.ownedBy, k.createdBy, k.operatingMode)
	}
}

// OnAdd implements toolscache.ResourceEventHandler.
func (c *SandboxCollector) OnAdd(obj any, _ bool) {
	if sb, ok := obj.(*sandboxv1beta1.Sandbox); ok {
		c.move(nil, sb)
	}
}

// OnUpdate implements toolscache.ResourceEventHandler.
func (c *SandboxCollector) OnUpdate(oldObj, newObj any) {
	old, ok1 := oldObj.(*sandboxv1beta1.Sandbox)
	sb, ok2 := newObj.(*sandboxv1beta1.Sandbox)
	if ok1 && ok2 {
		c.move(old, sb)
	}
}

// OnDelete implements toolscache.ResourceEventHandler. A delete the watch missed arrives as the
// last state the cache held, which is the one that was counted.
func (c *SandboxCollector) OnDelete(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if sb, ok := obj.(*sandboxv1beta1.Sandbox); ok {
		c.move(sb, nil)
	}
}

// move counts a Sandbox that went from old to sb; nil is its absence.
func (c *SandboxCollector) move(old, sb *sandboxv1beta1.Sandbox) {
	var from, to sandboxKey
	if old != nil {
		from = keyOf(old)
	}
	if sb != nil {
		to = keyOf(sb)
	}
	if old != nil && sb != nil && from == to {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old != nil {
		if c.counts[from]--; c.counts[from] <= 0 {
			delete(c.counts, from)
		}
	}
	if sb != nil {
		c.counts[to]++
	}
}

// sandboxKey is one combination of agent_sandboxes label values.
type sandboxKey struct {
	namespace, ready, expired, launchType, template, ownedBy, createdBy, operatingMode string
}

// keyOf returns the agent_sandboxes label values of sb.
func keyOf(sb *sandboxv1beta1.Sandbox) sandboxKey {
	k := sandboxKey{
		namespace:  sb.Namespace,
		ready:      "false",
		expired:    "false",
		launchType: LaunchTypeCold,
		template:   UnknownTemplate,
		ownedBy:    ownedBy(sb),
		createdBy:  normalizeCreatedBy(sb.Labels[sandboxv1beta1.CreatedByLabel]),
		// operating_mode (agent-sandbox v1) is the mode asked for; an unset mode means Running.
		operatingMode: string(sandboxv1beta1.SandboxOperatingModeRunning),
	}
	if sb.Spec.OperatingMode != "" {
		k.operatingMode = string(sb.Spec.OperatingMode)
	}
	if ready := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady); ready != nil {
		if ready.Status == metav1.ConditionTrue {
			k.ready = "true"
		}
		if ready.Reason == sandboxv1beta1.SandboxReasonExpired {
			k.expired = "true"
		}
	}
	if sb.Labels[sandboxv1beta1.LaunchTypeLabel] == LaunchTypeWarm {
		k.launchType = LaunchTypeWarm
	}
	if t := sb.Annotations[sandboxv1beta1.SandboxTemplateRefAnnotation]; t != "" {
		k.template = t
	}
	return k
}

// ownedBy returns the owned_by value of sb from its controller owner reference.
func ownedBy(sb *sandboxv1beta1.Sandbox) string {
	ref := metav1.GetControllerOf(sb)
	if ref == nil {
		return OwnedByNone
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != extensionsGroup {
		return OwnedByNone
	}
	switch ref.Kind {
	case OwnedBySandboxClaim, OwnedBySandboxWarmPool:
		return ref.Kind
	default:
		return OwnedByNone
	}
}

// normalizeCreatedBy maps the agents.x-k8s.io/created-by label to agent-sandbox's allow-list
// (plus kubox's TypeScript SDK), so a client cannot create unbounded label values.
func normalizeCreatedBy(v string) string {
	switch v {
	case extv1beta1.CreatedByGoClient, extv1beta1.CreatedByPythonClient, extv1beta1.CreatedByTypeScriptClient, extv1beta1.CreatedByController:
		return v
	default:
		return CreatedByUnknown
	}
}
