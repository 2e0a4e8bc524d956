package nodeapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
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

func TestCallsGoToThePodsNodeWithTheToken(t *testing.T) {
	node := &fakeNode{}
	mux := http.NewServeMux()
	mux.Handle(nodev1connect.NewSnapshotServiceHandler(node))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	p := int32(n)
	if err := New(Options{TokenFile: tokenFile, Port: p}).DeleteSnapshot(t.Context(), host, "ns", "snap"); err != nil {
		t.Fatalf("DeleteSnapshot at %s: %v", host, err)
	}
	if node.auth != "Bearer s3cret" {
		t.Errorf("kubox-node got Authorization %q, want the token file's token", node.auth)
	}
	if err := New(Options{TokenFile: tokenFile, Port: p}).DeleteSnapshot(t.Context(), "", "ns", "snap"); err == nil {
		t.Error("DeleteSnapshot with no host IP succeeded, want an error naming the missing status.hostIP")
	}
}

func TestStatusRecordsWhatKuboxNodeVerified(t *testing.T) {
	m := Status("node-a", &nodev1.Snapshot{Name: "uid-1", Image: "/s/ns/uid-1/image", SizeBytes: 42, Sha256: "abc", Stored: true})
	if m.Snapshot != "uid-1" || m.NodeName != "node-a" || m.Image != "/s/ns/uid-1/image" || m.SizeBytes != 42 || m.SHA256 != "abc" || !m.Stored {
		t.Errorf("Status = %+v; want the snapshot's name, node, image, size, checksum and that the store holds it", m)
	}
}
