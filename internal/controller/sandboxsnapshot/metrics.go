package sandboxsnapshot

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// Label values of kind in the snapshot storage metrics.
const (
	// KindSandboxSnapshot counts the SandboxSnapshots taken (status.snapshot).
	KindSandboxSnapshot = "SandboxSnapshot"
	// KindSandboxMemory counts the memory snapshots of suspended Sandboxes (status.memory).
	KindSandboxMemory = "Sandbox"
)

var (
	storageBytesDesc = prometheus.NewDesc("kubox_snapshot_storage_bytes",
		"Bytes of the snapshots kept per namespace: the sizes of the taken SandboxSnapshots (kind SandboxSnapshot) and of "+
			"the kept memory of suspended Sandboxes (kind Sandbox), as kubox-node measured them. Each is on the node that took "+
			"it, and in the snapshot store when status.snapshot.stored; the S3 store keeps chunks shared between snapshots once, "+
			"so the bucket may hold less.",
		[]string{"namespace", "kind"}, nil)
	snapshotsDesc = prometheus.NewDesc("kubox_snapshots",
		"Snapshots kept per namespace (kinds as kubox_snapshot_storage_bytes).", []string{"namespace", "kind"}, nil)
)

// storageCollector exports kubox_snapshot_storage_bytes and kubox_snapshots from the cache at
// each scrape (read in place, not copied): one series per namespace and kind, never one per
// snapshot.
type storageCollector struct {
	reader client.Reader
}

// usage is what one namespace and kind holds.
type usage struct {
	bytes int64
	count int
}

type usageKey struct{ namespace, kind string }

// usageOf sums the snapshots of snaps and sandboxes by namespace and kind: the pure part of the
// collector.
func usageOf(snaps []extv1beta1.SandboxSnapshot, sandboxes []sandboxv1beta1.Sandbox) map[usageKey]usage {
	out := map[usageKey]usage{}
	add := func(ns, kind string, m *sandboxv1beta1.MemoryStatus) {
		if m == nil {
			return
		}
		u := out[usageKey{ns, kind}]
		u.bytes += m.SizeBytes
		u.count++
		out[usageKey{ns, kind}] = u
	}
	for i := range snaps {
		add(snaps[i].Namespace, KindSandboxSnapshot, snaps[i].Status.Snapshot)
	}
	for i := range sandboxes {
		add(sandboxes[i].Namespace, KindSandboxMemory, sandboxes[i].Status.Memory)
	}
	return out
}

func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storageBytesDesc
	ch <- snapshotsDesc
}

// scrapeTimeout bounds the cache reads of one scrape.
const scrapeTimeout = 10 * time.Second

func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	snaps, sandboxes := &extv1beta1.SandboxSnapshotList{}, &sandboxv1beta1.SandboxList{}
	// Read only, so the cache's objects are not copied at each scrape.
	if err := c.reader.List(ctx, snaps, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(storageBytesDesc, err)
		return
	}
	if err := c.reader.List(ctx, sandboxes, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(storageBytesDesc, err)
		return
	}
	for k, u := range usageOf(snaps.Items, sandboxes.Items) {
		ch <- prometheus.MustNewConstMetric(storageBytesDesc, prometheus.GaugeValue, float64(u.bytes), k.namespace, k.kind)
		ch <- prometheus.MustNewConstMetric(snapshotsDesc, prometheus.GaugeValue, float64(u.count), k.namespace, k.kind)
	}
}

var (
	registerOnce sync.Once
	registerErr  error
)

// RegisterMetrics registers the snapshot storage collector, reading through r (the manager's
// cache), on controller-runtime's registry. Only the first call registers.
func RegisterMetrics(r client.Reader) error {
	registerOnce.Do(func() { registerErr = crmetrics.Registry.Register(&storageCollector{reader: r}) })
	return registerErr
}
