package server

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/store"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
	"github.com/kubox-dev/kubox/proto/kubox/node/v1/nodev1connect"
)

// testKey is the manifest key of the tests' nodes.
var testKey = checkpoint.Key("0123456789abcdef0123456789abcdef")

// serveWithStore starts the API with a snapshot store (nil: none) and a checkpoint that writes a
// complete snapshot folder; it returns the client and the node's snapshot root.
func serveWithStore(t *testing.T, st store.Store) (nodev1connect.SnapshotServiceClient, string) {
	t.Helper()
	root := t.TempDir()
	s, err := New(Config{Node: fakeNode(t), SnapshotRoot: root, Token: auth.Fixed([]byte(token)), Store: st, Key: testKey,
		checkpoint: func(_ context.Context, _ checkpoint.Runsc, o checkpoint.Options) (*checkpoint.Manifest, error) {
			if err := os.MkdirAll(filepath.Join(o.Dir, "image"), 0o700); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(o.Dir, "image", "checkpoint.img"), []byte("the sandbox's memory"), 0o600); err != nil {
				return nil, err
			}
			m := &checkpoint.Manifest{Version: 1, Kind: checkpoint.Full, Pod: checkpoint.PodRef{Namespace: "team-a", Name: "py", UID: "uid-1"}}
			if err := checkpoint.WriteManifest(o.Dir, m); err != nil {
				return nil, err
			}
			return m, o.Key.Sign(o.Dir, filepath.Base(filepath.Dir(o.Dir)), filepath.Base(o.Dir))
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return nodev1connect.NewSnapshotServiceClient(contract.BearerClient(token), srv.URL), root
}

// TestSnapshotsGoToTheStoreAndComeBack: with a store, a checkpoint is stored (and says so), a
// fetch of a snapshot on the node copies nothing, a fetch of one the node lost copies it back
// verified, and a delete removes both copies.
func TestSnapshotsGoToTheStoreAndComeBack(t *testing.T) {
	st := store.Dir{Root: t.TempDir(), Key: testKey}
	c, root := serveWithStore(t, st)
	ctx := context.Background()
	res, err := c.Checkpoint(ctx, connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", PodUid: "uid-1", Snapshot: "s1"}))
	if err != nil {
		t.Fatal(err)
	}
	taken := res.Msg.GetSnapshot()
	if !taken.GetStored() {
		t.Fatalf("snapshot %v: want stored", taken)
	}
	if k, l := taken.GetStoreKind(), taken.GetStoreLocation(); k != store.KindFilesystem || l != filepath.Join(st.Root, "team-a", "s1") {
		t.Errorf("snapshot's store %q at %q; want %q at its folder in the store", k, l, store.KindFilesystem)
	}
	if _, err := checkpoint.Verify(filepath.Join(st.Root, "team-a", "s1")); err != nil {
		t.Fatalf("the store's copy: %v", err)
	}
	fetch := func() (*nodev1.FetchSnapshotResponse, error) {
		r, err := c.FetchSnapshot(ctx, connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: "team-a", Snapshot: "s1"}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	got, err := fetch()
	if err != nil || got.GetFetched() || got.GetSnapshot().GetSha256() != taken.GetSha256() {
		t.Fatalf("fetch of a snapshot on the node: %v, %v; want it as taken, not copied", got, err)
	}
	local := filepath.Join(root, "team-a", "s1")
	if err := os.RemoveAll(local); err != nil {
		t.Fatal(err)
	}
	got, err = fetch()
	if err != nil || !got.GetFetched() || got.GetSnapshot().GetSha256() != taken.GetSha256() || got.GetSnapshot().GetImage() != filepath.Join(local, "image") {
		t.Fatalf("fetch of a lost snapshot: %v, %v; want it copied back to %s", got, err, local)
	}
	if _, err := checkpoint.Verify(local); err != nil {
		t.Errorf("the fetched copy: %v", err)
	}
	if _, err := c.DeleteSnapshot(ctx, connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: "team-a", Snapshot: "s1"})); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{local, filepath.Join(st.Root, "team-a", "s1")} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s after the delete: %v, want gone", dir, err)
		}
	}
	if _, err := fetch(); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("fetch of a deleted snapshot: %v, want NotFound", err)
	}
}

// TestFetchWithoutAStoreSaysWhere: a node without a store cannot fetch a snapshot it lacks, and
// says to restore it where it was taken.
func TestFetchWithoutAStoreSaysWhere(t *testing.T) {
	c, _ := serveWithStore(t, nil)
	_, err := c.FetchSnapshot(context.Background(), connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: "team-a", Snapshot: "elsewhere"}))
	if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "no snapshot store") {
		t.Errorf("fetch without a store: %v, want NotFound naming the missing --snapshot-store", err)
	}
	res, err := c.Checkpoint(context.Background(), connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "s1"}))
	if err != nil || res.Msg.GetSnapshot().GetStored() {
		t.Errorf("checkpoint without a store: %v, stored %v; want it taken and not stored", err, res.Msg.GetSnapshot().GetStored())
	}
}

// TestSweepRemovesFetchedCopiesTheStoreDropped: a snapshot this node fetched is removed once the
// store no longer holds it (deleted through the node that took it); one it took itself, or one
// the store still holds, stays.
func TestSweepRemovesFetchedCopiesTheStoreDropped(t *testing.T) {
	st := store.Dir{Root: t.TempDir(), Key: testKey}
	c, root := serveWithStore(t, st)
	ctx := context.Background()
	for _, name := range []string{"fetched", "kept", "own"} {
		if _, err := c.Checkpoint(ctx, connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: name})); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"fetched", "kept"} { // as if taken on another node
		if err := os.RemoveAll(filepath.Join(root, "team-a", name)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.FetchSnapshot(ctx, connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: "team-a", Snapshot: name})); err != nil {
			t.Fatal(err)
		}
	}
	// The other node deletes "fetched" and "own" from the store; this node's copies remain.
	for _, name := range []string{"fetched", "own"} {
		if err := st.Delete(ctx, "team-a", name); err != nil {
			t.Fatal(err)
		}
	}
	s := sweeper(t, root, st)
	s.sweepOnce(ctx)
	for name, want := range map[string]bool{"fetched": false, "kept": true, "own": true} {
		_, err := os.Stat(filepath.Join(root, "team-a", name))
		if got := err == nil; got != want {
			t.Errorf("after the sweep, %s on the node: %v; want present=%v", name, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "team-a", "fetched.fetched")); !os.IsNotExist(err) {
		t.Errorf("the marker of the removed copy: %v, want gone", err)
	}
}

// sweeper is a Server on root and st, for calling sweepOnce directly.
func sweeper(t *testing.T, root string, st store.Store) *Server {
	t.Helper()
	s, err := New(Config{SnapshotRoot: root, Store: st, Token: auth.Fixed([]byte(token)), Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFetchOfALocalSnapshotNeedsNoClaim: the members of a snapshot pool created together all fetch
// the snapshot at once; only a copy from the store takes the snapshot's claim.
func TestFetchOfALocalSnapshotNeedsNoClaim(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "team-a", "s1")
	if err := os.MkdirAll(filepath.Join(dir, "image"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "image", "checkpoint.img"), []byte("memory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteManifest(dir, &checkpoint.Manifest{Version: 1, Kind: checkpoint.Full}); err != nil {
		t.Fatal(err)
	}
	if err := testKey.Sign(dir, "team-a", "s1"); err != nil {
		t.Fatal(err)
	}
	s := sweeper(t, root, store.Dir{Root: t.TempDir(), Key: testKey})
	_, release, err := s.claim("team-a", "s1") // another call holds it
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	req := connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: "team-a", Snapshot: "s1"})
	if res, err := s.FetchSnapshot(context.Background(), req); err != nil || res.Msg.GetFetched() {
		t.Errorf("fetch of a snapshot on the node while its name is claimed: %v, %v; want it answered at once", res, err)
	}
	req = connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: "team-a", Snapshot: "../etc"})
	if _, err := s.FetchSnapshot(context.Background(), req); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("fetch of a name that is not a DNS label: %v, want InvalidArgument", err)
	}
}

// TestFetchRefusesAnUnsignedSnapshotOfTheStore: a snapshot planted in the shared store without
// this cluster's signature (by a node or anyone who writes the volume) is refused, says why, and
// leaves nothing on the node for the gVisor shim to restore.
func TestFetchRefusesAnUnsignedSnapshotOfTheStore(t *testing.T) {
	st := store.Dir{Root: t.TempDir(), Key: testKey}
	c, root := serveWithStore(t, st)
	ctx := context.Background()
	if _, err := c.Checkpoint(ctx, connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", PodUid: "uid-1", Snapshot: "s1"})); err != nil {
		t.Fatal(err)
	}
	// Planted: the store's copy gets other memory and a manifest that matches it, unsigned.
	stored := filepath.Join(st.Root, "team-a", "s1")
	if err := os.WriteFile(filepath.Join(stored, "image", "checkpoint.img"), []byte("planted memory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteManifest(stored, &checkpoint.Manifest{Version: 1, Kind: checkpoint.Full}); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(root, "team-a", "s1")
	if err := os.RemoveAll(local); err != nil {
		t.Fatal(err)
	}
	_, err := c.FetchSnapshot(ctx, connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: "team-a", Snapshot: "s1"}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "signature") {
		t.Errorf("fetch of a planted snapshot: %v; want FailedPrecondition naming the signature", err)
	}
	if _, err := os.Stat(local); !os.IsNotExist(err) {
		t.Errorf("%s after the refused fetch: %v; want nothing on the node", local, err)
	}
}
