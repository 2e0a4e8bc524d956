package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

func TestDescribeSnapshotSaysWhereItIs(t *testing.T) {
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "py-snap-x"},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "py"}},
		Status: extv1beta1.SandboxSnapshotStatus{Snapshot: &sandboxv1beta1.MemoryStatus{NodeName: "node-a", SizeBytes: 3 << 20,
			SHA256: "abc", Duration: &metav1.Duration{Duration: 300 * time.Millisecond}}}}
	if got, want := describeSnapshot(snap), "snapshot py-snap-x of sandbox py: 3.0 MiB on node node-a, taken in 300ms, sha256 abc"; got != want {
		t.Errorf("describeSnapshot = %q, want %q", got, want)
	}
	snap.Status.Snapshot.Stored = true
	if got := describeSnapshot(snap); !strings.Contains(got, "on node node-a and in the snapshot store,") {
		t.Errorf("describeSnapshot of a stored snapshot = %q; want it to say the store holds it", got)
	}
	snap.Spec.Type = extv1beta1.SnapshotTypeFilesystem
	if got := describeSnapshot(snap); !strings.HasPrefix(got, "filesystem snapshot py-snap-x of sandbox py:") {
		t.Errorf("describeSnapshot of a filesystem snapshot = %q; want it to say it holds files only", got)
	}
}
