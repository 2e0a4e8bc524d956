package sandboxsnapshot

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// TestStorageMetricsPerNamespace: storage used is exported per namespace and kind, one series
// each however many snapshots there are, summing the snapshots taken (not those still pending)
// and the kept memory of suspended Sandboxes.
func TestStorageMetricsPerNamespace(t *testing.T) {
	taken := func(namespace, name string, size int64) client.Object {
		return &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Status: extv1beta1.SandboxSnapshotStatus{Snapshot: &sandboxv1beta1.MemoryStatus{Snapshot: name, SizeBytes: size}}}
	}
	pending := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pending"}}
	suspended := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "sb"},
		Status: sandboxv1beta1.SandboxStatus{Memory: &sandboxv1beta1.MemoryStatus{Snapshot: "pod-uid", SizeBytes: 300}}}
	running := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "running"}}
	c := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(taken("team-a", "s1", 100), taken("team-a", "s2", 20),
		taken("team-b", "s1", 5), pending, suspended, running).Build()
	want := `
# HELP kubox_snapshots Snapshots kept per namespace (kinds as kubox_snapshot_storage_bytes).
# TYPE kubox_snapshots gauge
kubox_snapshots{kind="Sandbox",namespace="team-b"} 1
kubox_snapshots{kind="SandboxSnapshot",namespace="team-a"} 2
kubox_snapshots{kind="SandboxSnapshot",namespace="team-b"} 1
`
	if err := testutil.CollectAndCompare(&storageCollector{reader: c}, strings.NewReader(want), "kubox_snapshots"); err != nil {
		t.Error(err)
	}
	wantBytes := map[string]float64{"team-a SandboxSnapshot": 120, "team-b SandboxSnapshot": 5, "team-b Sandbox": 300}
	got := map[string]float64{}
	snaps, sandboxes := &extv1beta1.SandboxSnapshotList{}, &sandboxv1beta1.SandboxList{}
	if err := c.List(t.Context(), snaps); err != nil {
		t.Fatal(err)
	}
	if err := c.List(t.Context(), sandboxes); err != nil {
		t.Fatal(err)
	}
	for k, u := range usageOf(snaps.Items, sandboxes.Items) {
		got[k.namespace+" "+k.kind] = float64(u.bytes)
	}
	for k, v := range wantBytes {
		if got[k] != v {
			t.Errorf("bytes of %s = %v; want %v (all: %v)", k, got[k], v, got)
		}
	}
	if n := testutil.CollectAndCount(&storageCollector{reader: c}, "kubox_snapshot_storage_bytes"); n != 3 {
		t.Errorf("kubox_snapshot_storage_bytes has %d series; want 3, one per namespace and kind", n)
	}
}
