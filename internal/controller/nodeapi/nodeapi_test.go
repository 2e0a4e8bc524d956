package nodeapi

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
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

// TestNotConfiguredSaysWhatIsMissing checks the Client of a controller with no
// controllers.sandbox.memory.tokenFile: New gives it, Configured says so, and every call fails
// with ErrNotConfigured, whose message names the setting, without reaching any node.
func TestNotConfiguredSaysWhatIsMissing(t *testing.T) {
	c := New(Options{Port: 9097, URL: "https://127.0.0.1:1"})
	if c == nil {
		t.Fatal("New without a token file = nil; want the not-configured Client")
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"Configured":     func() error { return Configured(c) },
		"Checkpoint":     func() error { _, err := c.Checkpoint(ctx, "127.0.0.1", &nodev1.CheckpointRequest{}); return err },
		"DeleteSnapshot": func() error { return c.DeleteSnapshot(ctx, "127.0.0.1", "ns", "snap") },
		"Fetch":          func() error { _, err := c.Fetch(ctx, "127.0.0.1", "ns", "snap"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			if !errors.Is(err, ErrNotConfigured) || !strings.Contains(err.Error(), "controllers.sandbox.memory.tokenFile") {
				t.Errorf("%s = %v; want ErrNotConfigured naming controllers.sandbox.memory.tokenFile", name, err)
			}
		})
	}
	if err := Configured(New(Options{TokenFile: filepath.Join(t.TempDir(), "token")})); err != nil {
		t.Errorf("Configured(a Client with a token file) = %v, want nil", err)
	}
}
