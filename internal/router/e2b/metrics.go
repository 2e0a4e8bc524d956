package e2b

import (
	"context"
	"math"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// podMetricsGVK is metrics-server's PodMetrics, read as the caller (RBAC: get on pods in group
// metrics.k8s.io): the router gets no nodes/proxy, so the kubelet's API stays out of its reach.
var podMetricsGVK = schema.GroupVersionKind{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetrics"}

// e2bMaxMetricsIDs is the most sandbox IDs GET /sandboxes/metrics takes (E2B's maxItems).
const e2bMaxMetricsIDs = 100

// e2bMetric is E2B's SandboxMetric. metrics.k8s.io has no page cache or disk figures: memCache,
// diskUsed and diskTotal are 0 (docs/e2b.md).
type e2bMetric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int32     `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// podMetrics is the part of metrics.k8s.io/v1beta1 PodMetrics the mapping reads.
type podMetrics struct {
	Timestamp  metav1.Time `json:"timestamp"`
	Containers []struct {
		Name  string              `json:"name"`
		Usage corev1.ResourceList `json:"usage"`
	} `json:"containers"`
}

// e2bMetricOf maps a Pod's metrics (CPU and working-set memory, summed over its containers) and
// the limits of the sandbox's containers to E2B's SandboxMetric: cpuCount is the CPU limit in
// whole cores, rounded up (0 without a limit), cpuUsedPct the usage as a percentage of the limit
// (of one core without one), memTotal the memory limit (0 without one).
func e2bMetricOf(pm *podMetrics, limits corev1.ResourceList) e2bMetric {
	var cpu, mem int64
	for _, c := range pm.Containers {
		cpu += c.Usage.Cpu().MilliValue()
		mem += c.Usage.Memory().Value()
	}
	m := e2bMetric{Timestamp: pm.Timestamp.UTC(), TimestampUnix: pm.Timestamp.Unix(), MemUsed: mem, MemTotal: limits.Memory().Value()}
	limit := limits.Cpu().MilliValue()
	m.CPUCount = int32(math.Ceil(float64(limit) / 1000))
	if limit == 0 {
		limit = 1000
	}
	m.CPUUsedPct = math.Round(float64(cpu)/float64(limit)*100*100) / 100
	return m
}

// sandboxLimits sums the limits of the sandbox's containers (its spec, as the caller read it).
func sandboxLimits(sb *sandboxv1beta1.Sandbox) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range sb.Spec.PodTemplate.Spec.Containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Limits[name]; ok {
				sum := out[name]
				sum.Add(q)
				out[name] = sum
			}
		}
	}
	return out
}

// e2bMetrics is E2B's getMetrics: the latest PodMetrics of the sandbox's Pod, as one entry
// (metrics.k8s.io keeps no history: start and end are not honoured); none while it is paused or
// before metrics-server has measured it.
func (a *API) e2bMetrics(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	m, herr := a.e2bSandboxMetric(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	out := []e2bMetric{}
	if m != nil {
		out = append(out, *m)
	}
	httperr.WriteJSON(w, http.StatusOK, out)
	return nil
}

// e2bMetricsList is E2B's GET /sandboxes/metrics?sandbox_ids=a,b: each sandbox's latest metric;
// sandboxes that do not exist or have none yet are left out, as E2B lists running sandboxes.
func (a *API) e2bMetricsList(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httperr.Error {
	var ids []string
	for _, v := range r.URL.Query()["sandbox_ids"] {
		for id := range strings.SplitSeq(v, ",") {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 || len(ids) > e2bMaxMetricsIDs {
		return httperr.Errorf(http.StatusBadRequest, "sandbox_ids has %d sandbox IDs; give 1 to %d, comma-separated", len(ids), e2bMaxMetricsIDs)
	}
	out := map[string]e2bMetric{}
	for _, id := range ids {
		m, herr := a.e2bSandboxMetric(ctx, c, id)
		switch {
		case herr != nil && (herr.Code == http.StatusNotFound || herr.Code == http.StatusConflict):
			continue
		case herr != nil:
			return herr
		case m != nil:
			out[id] = *m
		}
	}
	httperr.WriteJSON(w, http.StatusOK, map[string]any{"sandboxes": out})
	return nil
}

// e2bSandboxMetric reads sandbox id and its Pod's PodMetrics as the caller; nil when there is
// none yet (or the sandbox is paused).
func (a *API) e2bSandboxMetric(ctx context.Context, c *e2bCaller, id string) (*e2bMetric, *httperr.Error) {
	_, sb, herr := a.e2bClaimSandbox(ctx, c, id)
	if herr != nil {
		return nil, herr
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(podMetricsGVK)
	err := a.kube.Get(ctx, objectKey(sb.Namespace, sb.Name), u) // the Pod is named after its Sandbox
	switch {
	case meta.IsNoMatchError(err):
		return nil, httperr.Errorf(http.StatusNotImplemented, "getMetrics of sandbox %s: metrics.k8s.io is not served by this cluster: install metrics-server "+
			"(kubox reads PodMetrics as you, with get on pods in group metrics.k8s.io)", id)
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, e2bKubeError(err, "reading the PodMetrics (metrics.k8s.io) of sandbox "+id)
	}
	pm := &podMetrics{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pm); err != nil {
		return nil, httperr.Errorf(http.StatusBadGateway, "the PodMetrics of sandbox %s is not metrics.k8s.io/v1beta1's: %v", id, err)
	}
	m := e2bMetricOf(pm, sandboxLimits(sb))
	return &m, nil
}
