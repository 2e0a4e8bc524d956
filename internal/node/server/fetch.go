package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/store"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
)

// put copies a snapshot just verified into the store, when there is one, and reports whether the
// store holds it. A failure is logged and leaves the snapshot on this node only: the checkpoint
// itself succeeded, and the snapshot says it is not stored.
func (s *Server) put(ctx context.Context, snap *nodev1.Snapshot, dir string) bool {
	if s.cfg.Store == nil {
		return false
	}
	start := time.Now()
	if err := s.cfg.Store.Put(ctx, snap.GetNamespace(), snap.GetName(), dir); err != nil {
		s.cfg.Log.Error("Storing the snapshot failed; it stays on this node only", "namespace", snap.GetNamespace(),
			"snapshot", snap.GetName(), "err", err)
		return false
	}
	s.cfg.Log.Info("Stored", "namespace", snap.GetNamespace(), "snapshot", snap.GetName(), "bytes", snap.GetSizeBytes(),
		"took", time.Since(start))
	snap.StoreKind, snap.StoreLocation = store.Describe(s.cfg.Store, snap.GetNamespace(), snap.GetName())
	return true
}

// FetchSnapshot implements nodev1connect.SnapshotServiceHandler. A snapshot whose manifest is here
// (written last, so complete) is answered at once, without a claim, so the members of a snapshot
// pool created together all go on; one only in the store is copied and verified while the
// snapshot's name is claimed, so a concurrent call for it gets Aborted and asks again.
func (s *Server) FetchSnapshot(ctx context.Context, req *connect.Request[nodev1.FetchSnapshotRequest]) (*connect.Response[nodev1.FetchSnapshotResponse], error) {
	ns, name := req.Msg.GetNamespace(), req.Msg.GetSnapshot()
	dir, err := s.snapshotDir(ns, name)
	if err != nil {
		return nil, err
	}
	if res := s.onNode(ns, name, dir); res != nil {
		return res, nil
	}
	_, release, err := s.claim(ns, name)
	if err != nil {
		return nil, err
	}
	defer release()
	if res := s.onNode(ns, name, dir); res != nil { // fetched by a call that held the claim before
		return res, nil
	}
	if s.cfg.Store == nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("snapshot %s/%s is not on this node, and kubox-node has "+
			"no snapshot store (--snapshot-store) to fetch it from: restore it on the node that took it", ns, name))
	}
	_ = os.RemoveAll(dir) // an incomplete folder left by a crash
	// The marker goes first: a crash between the copy and a marker written after it would leave a
	// copy that no sweep ever removes, after the snapshot is deleted.
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	if err := os.WriteFile(fetchedMarker(dir), nil, 0o600); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	start := time.Now()
	switch err := s.cfg.Store.Get(ctx, ns, name, dir); {
	case errors.Is(err, store.ErrNotFound):
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("snapshot %s/%s is neither on this node nor in the snapshot store", ns, name))
	case errors.Is(err, checkpoint.ErrUnsigned):
		s.cfg.Log.Error("Refused a snapshot of the store that kubox-node did not sign", "namespace", ns, "snapshot", name, "err", err)
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("snapshot %s/%s in the snapshot store is refused: %w", ns, name, err))
	case err != nil:
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("fetching snapshot %s/%s from the snapshot store: %w", ns, name, err))
	}
	m, err := readManifest(dir)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	s.cfg.Log.Info("Fetched", "namespace", ns, "snapshot", name, "bytes", m.Size, "took", time.Since(start))
	snap := snapshotOf(ns, name, dir, m)
	snap.Stored = true
	snap.StoreKind, snap.StoreLocation = store.Describe(s.cfg.Store, ns, name)
	return connect.NewResponse(&nodev1.FetchSnapshotResponse{Snapshot: snap, Fetched: true}), nil
}

// onNode answers a fetch of the snapshot in dir when its manifest is there (written last, so the
// snapshot is complete) with this node's signature for ns/name, and is nil otherwise: a folder
// without one (a crash before the signature, a snapshot of an older kubox-node) is fetched
// again from the store, and refused by the gVisor shim if it stays.
func (s *Server) onNode(ns, name, dir string) *connect.Response[nodev1.FetchSnapshotResponse] {
	m, err := s.cfg.Key.CheckSignature(dir, ns, name)
	if err != nil {
		return nil
	}
	return connect.NewResponse(&nodev1.FetchSnapshotResponse{Snapshot: snapshotOf(ns, name, dir, m)})
}

// readManifest reads the manifest of the snapshot folder dir.
func readManifest(dir string) (*checkpoint.Manifest, error) {
	return checkpoint.ReadManifest(filepath.Join(dir, checkpoint.ManifestFile))
}

// fetchedMarker is the file beside the snapshot folder dir that says it was fetched from the store:
// a copy this node did not take, which Sweep removes once the store no longer holds the snapshot
// (its owner deleted it through the node that took it).
func fetchedMarker(dir string) string { return dir + ".fetched" }

// Sweep removes, every interval until ctx ends, the snapshots this node fetched from the store
// that the store no longer holds: deleting a snapshot reaches the node that took it (and the
// store), not the nodes that fetched a copy.
func (s *Server) Sweep(ctx context.Context, interval time.Duration) {
	if s.cfg.Store == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.sweepOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepOnce is one pass of Sweep.
func (s *Server) sweepOnce(ctx context.Context) {
	markers, err := filepath.Glob(filepath.Join(s.cfg.SnapshotRoot, "*", "*.fetched"))
	if err != nil {
		return
	}
	for _, marker := range markers {
		dir := strings.TrimSuffix(marker, ".fetched")
		ns, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		if has, err := s.cfg.Store.Has(ctx, ns, name); err != nil || has {
			continue
		}
		claimed, release, err := s.claim(ns, name)
		if err != nil {
			continue // being fetched or deleted now; the next pass looks again
		}
		err = os.RemoveAll(claimed)
		if err == nil {
			err = os.Remove(marker)
		}
		release()
		if err != nil {
			s.cfg.Log.Error("Removing a fetched snapshot the store no longer holds", "namespace", ns, "snapshot", name, "err", err)
			continue
		}
		s.cfg.Log.Info("Removed a fetched snapshot the store no longer holds", "namespace", ns, "snapshot", name)
	}
}
