package metrics

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// extensionsGroup is the API group of SandboxClaim and SandboxWarmPool. Owner references keep the
// version they were written with (v1alpha1 or v1beta1), so ownership is matched by group and kind.
const extensionsGroup = "extensions.agents.x-k8s.io"

// listTimeout bounds the List of one scrape. The cache answers from memory; the bound only matters
// before the cache has synced, when a List blocks.
const listTimeout = 5 * time.Second

var sandboxesDesc = prometheus.NewDesc(
	"agent_sandboxes",
	"Monitor the point-in-time number of sandboxes in the cluster.",
	[]string{"namespace", "ready_condition", "expired", "launch_type", "sandbox_template", "owned_by", "created_by", "operating_mode"},
	nil,
)

// sandboxCollector computes agent_sandboxes on each scrape from the Sandboxes in the cache, so the
// gauge can never drift from the cluster the way a gauge updated by the reconciler can.
type sandboxCollector struct {
	reader client.Reader
	log    logr.Logger
}

// NewSandboxCollector returns the collector of agent_sandboxes. r should be the manager's cache: a
// scrape lists every Sandbox from it (without deep copies) and counts them by their labels.
func NewSandboxCollector(r client.Reader, log logr.Logger) prometheus.Collector {
	return &sandboxCollector{reader: r, log: log}
}

// Describe implements prometheus.Collector.
func (c *sandboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sandboxesDesc
}

// sandboxKey is one combination of agent_sandboxes label values.
type sandboxKey struct {
	namespace, ready, expired, launchType, template, ownedBy, createdBy, operatingMode string
}

// Collect implements prometheus.Collector. When the List fails the error is logged and the family
// is left out of this scrape, so the other families are still served.
func (c *sandboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var list sandboxv1beta1.SandboxList
	// The objects are only read, never kept or changed, so the cache may hand out its own copies.
	if err := c.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		c.log.Error(err, "Failed to list Sandboxes for the agent_sandboxes metric")
		return
	}
	counts := map[sandboxKey]int{}
	for i := range list.Items {
		counts[keyOf(&list.Items[i])]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(sandboxesDesc, prometheus.GaugeValue, float64(n),
			k.namespace, k.ready, k.expired, k.launchType, k.template, k.ownedBy, k.createdBy, k.operatingMode)
	}
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

// normalizeCreatedBy maps the agents.x-k8s.io/created-by label to agent-sandbox's allow-list, so
// a client cannot create unbounded label values.
func normalizeCreatedBy(v string) string {
	switch v {
	case "go-client", "python-client", "controller":
		return v
	default:
		return CreatedByUnknown
	}
}
