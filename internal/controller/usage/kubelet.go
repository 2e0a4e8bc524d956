package usage

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/usage"
)

// The controller reads kubelets' resource metrics with its own identity: the kubelet authorizes
// /metrics/resource as get on nodes/metrics (what metrics-server is granted), nothing more.
// +kubebuilder:rbac:groups="",resources=nodes/metrics,verbs=get

// KubeletConfig configures measured usage: the kubelets' resource metrics, read directly.
type KubeletConfig struct {
	// Interval is the time between two reads of every kubelet (default 30 s).
	Interval time.Duration
	// CAFile holds the certificates that sign the kubelets' serving certificates; empty: the
	// controller's own CA (the cluster CA, which signs them when kubelets bootstrap their serving
	// certificates).
	CAFile string
	// InsecureSkipVerify reads kubelets without checking their certificates (self-signed
	// serving certificates): a machine that can pose as a node's address is then sent the
	// controller's credentials.
	InsecureSkipVerify bool
	// Timeout bounds one kubelet read (default 10 s).
	Timeout time.Duration
}

// KubeletSource reads, every Interval, the resource metrics of each kubelet that runs a Pod of a
// sandbox, and integrates each Pod's samples into its sandbox's measured figures (the Pod's
// cgroup: CPU seconds used, working-set memory over time). A kubelet that cannot be read is
// logged and counted, and its sandboxes keep what was measured before.
type KubeletSource struct {
	cfg    KubeletConfig
	pods   client.Reader // the manager's cache: sandboxes' Pods
	nodes  client.Reader // Nodes, read when needed (not cached)
	hc     *http.Client
	log    *slog.Logger
	labels func(types.UID) ([]string, bool)
	now    func() time.Time

	mu     sync.Mutex
	meters map[types.UID]*usage.MeasuredMeter

	cpu, mem *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// NewKubeletSource returns a source that authenticates to kubelets as restCfg does; labels gives
// a tracked sandbox's metric labels (namespace, template, principal).
func NewKubeletSource(cfg KubeletConfig, restCfg *rest.Config, pods, nodes client.Reader, t *Tracker, log *slog.Logger) (*KubeletSource, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	c := rest.CopyConfig(restCfg)
	if cfg.InsecureSkipVerify {
		c.Insecure, c.CAFile, c.CAData = true, "", nil
	} else if cfg.CAFile != "" {
		c.CAFile, c.CAData = cfg.CAFile, nil
	}
	c.ServerName = ""
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("measured usage: the client for kubelets: %w (check usage.kubelet.caFile)", err)
	}
	hc.Timeout = cfg.Timeout
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	labels := []string{"namespace", "template", "principal"}
	return &KubeletSource{cfg: cfg, pods: pods, nodes: nodes, hc: hc, log: log, labels: t.metricLabels, now: time.Now,
		meters: map[types.UID]*usage.MeasuredMeter{},
		cpu: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_usage_cpu_seconds_total",
			Help: "CPU seconds sandboxes' Pods used, measured by their kubelets."}, labels),
		mem: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_usage_memory_gib_seconds_total",
			Help: "Working-set memory of sandboxes' Pods over time in GiB-seconds, measured by their kubelets."}, labels),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_usage_kubelet_read_failures_total",
			Help: "Reads of a kubelet's resource metrics that failed, by node."}, []string{"node"}),
	}, nil
}

// Collectors are the source's metrics.
func (k *KubeletSource) Collectors() []prometheus.Collector {
	return []prometheus.Collector{k.cpu, k.mem, k.failures}
}

// Start reads the kubelets every Interval until ctx ends (a manager Runnable).
func (k *KubeletSource) Start(ctx context.Context) error {
	wait.UntilWithContext(ctx, k.ReadAll, k.cfg.Interval)
	return nil
}

// NeedLeaderElection reports true: only the leader reads the kubelets, as only its Tracker writes
// records.
func (k *KubeletSource) NeedLeaderElection() bool { return true }

// Take returns the measured figures of the sandbox with uid and forgets it; nil when none were
// measured.
func (k *KubeletSource) Take(uid types.UID) *usage.Measured {
	k.mu.Lock()
	defer k.mu.Unlock()
	mm := k.meters[uid]
	delete(k.meters, uid)
	if mm == nil {
		return nil
	}
	return mm.Measured()
}

// ReadAll reads every kubelet that runs a sandbox's Pod once.
func (k *KubeletSource) ReadAll(ctx context.Context) {
	var pods corev1.PodList
	if err := k.pods.List(ctx, &pods); err != nil {
		k.log.Error("measured usage: listing sandboxes' Pods failed", "err", err)
		return
	}
	byNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" && sandboxOf(p) != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	for node, ps := range byNode {
		samples, err := k.read(ctx, node)
		if err != nil {
			k.failures.WithLabelValues(node).Inc()
			k.log.Error("measured usage: reading a kubelet's resource metrics failed", "node", node, "err", err)
			continue
		}
		for _, p := range ps {
			if s, ok := samples[usage.PodKey{Namespace: p.Namespace, Name: p.Name}]; ok {
				k.add(sandboxOf(p), p, s)
			}
		}
	}
}

// sandboxOf is the UID of the Sandbox that controls p; empty for another Pod.
func sandboxOf(p *corev1.Pod) types.UID {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "Sandbox" && o.APIVersion == sandboxv1beta1.GroupVersion.String() {
			return o.UID
		}
	}
	return ""
}

func (k *KubeletSource) add(sandbox types.UID, p *corev1.Pod, s usage.PodSample) {
	labels, tracked := k.labels(sandbox)
	if !tracked {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	mm := k.meters[sandbox]
	if mm == nil {
		mm = &usage.MeasuredMeter{}
		k.meters[sandbox] = mm
	}
	var before usage.Measured
	if m := mm.Measured(); m != nil {
		before = *m
	}
	mm.Add(p.UID, p.CreationTimestamp.Time, s)
	if after := mm.Measured(); after != nil {
		k.cpu.WithLabelValues(labels...).Add(after.CPUSeconds - before.CPUSeconds)
		k.mem.WithLabelValues(labels...).Add(after.MemoryGiBSeconds - before.MemoryGiBSeconds)
	}
}

// read reads the resource metrics of node's kubelet at its InternalIP (else its first address)
// and the port the Node reports.
func (k *KubeletSource) read(ctx context.Context, name string) (map[usage.PodKey]usage.PodSample, error) {
	var node corev1.Node
	if err := k.nodes.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		return nil, err
	}
	host := ""
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP || host == "" {
			host = a.Address
		}
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if host == "" || port == 0 {
		return nil, fmt.Errorf("node %s reports no address or no kubelet port", name)
	}
	u := "https://" + net.JoinHostPort(host, strconv.Itoa(int(port))) + "/metrics/resource"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	res, err := k.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s (the controller needs get on nodes/metrics)", u, res.Status)
	}
	return usage.ParseResourceMetrics(res.Body, k.now())
}

// metricLabels are the metric labels of the tracked sandbox with uid.
func (t *Tracker) metricLabels(uid types.UID) ([]string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := t.tracked[uid]
	if tr == nil {
		return nil, false
	}
	return tr.labels, true
}
