package nodeapi

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"connectrpc.com/connect"

	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
	"github.com/kubox-dev/kubox/proto/kubox/node/v1/nodev1connect"
)

// fakeNode answers DeleteSnapshot, recording the bearer token it got.
type fakeNode struct {
	nodev1connect.UnimplementedSnapshotServiceHandler
	auth string
}

func (f *fakeNode) DeleteSnapshot(_ context.Context, req *connect.Request[nodev1.DeleteSnapshotRequest]) (*connect.Response[nodev1.DeleteSnapshotResponse], error) {
	f.auth = req.Header().Get("Authorization")
	return connect.NewResponse(&nodev1.DeleteSnapshotResponse{}), nil
}

func TestMissingTokenFileSaysKuboxNodeIsNotInstalled(t *testing.T) {
	c := New(Options{TokenFile: filepath.Join(t.TempDir(), "token"), Port: 9097})
	err := c.DeleteSnapshot(t.Context(), "127.0.0.1", "ns", "snap")
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("DeleteSnapshot with no token file: %v, want ErrNotInstalled", err)
	}
}

func TestStatusRecordsWhatKuboxNodeVerified(t *testing.T) {
	m := Status("node-a", &nodev1.Snapshot{Name: "uid-1", Image: "/s/ns/uid-1/image", SizeBytes: 42, Sha256: "abc", Stored: true})
	if m.Snapshot != "uid-1" || m.NodeName != "node-a" || m.Image != "/s/ns/uid-1/image" || m.SizeBytes != 42 || m.SHA256 != "abc" || !m.Stored {
		t.Errorf("Status = %+v; want the snapshot's name, node, image, size, checksum and that the store holds it", m)
	}
}
