// Package server is kubox-node's API: it checkpoints the gVisor sandboxes of Pods running on its
// node into snapshots below <snapshot root>/<namespace>/ (package checkpoint) and removes them.
// kubox's patched gVisor shim restores a new Pod from such a snapshot (docs/checkpoint.md). Every
// call needs the node token as `Authorization: Bearer <token>`, and Serve serves it over TLS only
// (package nodetls), so that the token never crosses the network in clear.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/store"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
	"github.com/kubox-dev/kubox/proto/kubox/node/v1/nodev1connect"
)

// HealthPath answers 200 without a token.
const HealthPath = "/healthz"

// Config is what the server needs.
type Config struct {
	// Node is where containerd and the gVisor shim keep their state on this node.
	Node checkpoint.Node
	// SnapshotRoot is the folder of snapshots, the gVisor shim's kubox_snapshot_root: one
	// folder per namespace below it.
	SnapshotRoot string
	// Store, when set, keeps a copy of every snapshot taken here, from which FetchSnapshot copies
	// the snapshots this node lacks (taken on another node, or lost here).
	Store store.Store
	// Key signs every snapshot taken here and checks those found on this node (checkpoint.Key);
	// the gVisor shim restores only from a snapshot it signed.
	Key checkpoint.Key
	// Token is required of every call.
	Token *auth.Token
	// MaxCopyBytes bounds what a checkpoint copies from a Pod's mounts
	// (checkpoint.Options.MaxCopyBytes); zero is checkpoint.DefaultMaxCopyBytes.
	MaxCopyBytes int64
	Log          *slog.Logger
	// checkpoint replaces checkpoint.Checkpoint in tests.
	checkpoint func(context.Context, checkpoint.Runsc, checkpoint.Options) (*checkpoint.Manifest, error)
}

// Server serves nodev1connect.SnapshotService.
type Server struct {
	cfg Config
	// busy holds the snapshot folders being written or deleted (claim).
	mu   sync.Mutex
	busy map[string]bool
}

// New returns a Server; cfg.Token must be set.
func New(cfg Config) (*Server, error) {
	if cfg.Token == nil {
		return nil, errors.New("kubox-node needs a node token (--token-file)")
	}
	if cfg.SnapshotRoot == "" || !filepath.IsAbs(cfg.SnapshotRoot) {
		return nil, fmt.Errorf("the snapshot root %q must be an absolute path: the gVisor shim's kubox_snapshot_root", cfg.SnapshotRoot)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.checkpoint == nil {
		cfg.checkpoint = checkpoint.Checkpoint
	}
	return &Server{cfg: cfg, busy: map[string]bool{}}, nil
}

// Handler serves the API and HealthPath.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	path, h := nodev1connect.NewSnapshotServiceHandler(s, connect.WithInterceptors(s.authenticate()))
	mux.Handle(path, h)
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

// Serve serves Handler on l over TLS only, with tlsConfig (nodetls.ServerConfig: a certificate of
// the node token's key), until ctx ends, then lets the calls in flight finish for up to
// shutdownGrace. Every call carries the node token, which must never cross the network in clear:
// a plain HTTP request is answered 400 and never reaches the API.
func (s *Server) Serve(ctx context.Context, l net.Listener, tlsConfig *tls.Config) error {
	if tlsConfig == nil || (tlsConfig.GetCertificate == nil && len(tlsConfig.Certificates) == 0) {
		return errors.New("kubox-node serves its API over TLS only, and has no certificate (nodetls.ServerConfig)")
	}
	srv := &http.Server{Handler: s.Handler(), TLSConfig: tlsConfig, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelDebug)}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdownGrace is how long Serve waits for the calls in flight once its context ends.
const shutdownGrace = 30 * time.Second

// authenticate refuses a call without the node token.
func (s *Server) authenticate() connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			scheme, tok, _ := strings.Cut(req.Header().Get(contract.AuthorizationHeader), " ")
			if !strings.EqualFold(scheme, contract.BearerScheme) || !s.cfg.Token.Matches([]byte(strings.TrimSpace(tok))) {
				return nil, connect.NewError(connect.CodeUnauthenticated,
					errors.New("kubox-node needs 'Authorization: Bearer <node token>' with the token in its --token-file"))
			}
			return next(ctx, req)
		}
	}
}

// Checkpoint implements nodev1connect.SnapshotServiceHandler.
func (s *Server) Checkpoint(ctx context.Context, req *connect.Request[nodev1.CheckpointRequest]) (*connect.Response[nodev1.CheckpointResponse], error) {
	r := req.Msg
	if err := validName("pod", r.GetPod(), validation.IsDNS1123Subdomain); err != nil {
		return nil, err
	}
	kind, err := kindOf(r.GetKind())
	if err != nil {
		return nil, err
	}
	mounts, err := copyMounts(r.GetCopyVolumeMounts())
	if err != nil {
		return nil, err
	}
	dir, release, err := s.claim(r.GetNamespace(), r.GetSnapshot())
	if err != nil {
		return nil, err
	}
	defer release()
	if _, err := os.Lstat(dir); err == nil {
		return s.existing(ctx, r, dir)
	}
	node := s.cfg.Node
	sandboxID, err := checkpoint.FindSandbox(node.TaskDir(), r.GetNamespace(), r.GetPod(), r.GetPodUid())
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("pod %s/%s has no sandbox on this node: "+
			"a snapshot is taken on the node the Pod runs on, while it runs", r.GetNamespace(), r.GetPod()))
	}
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	start := time.Now()
	m, err := s.cfg.checkpoint(ctx, node.PodRunsc(), checkpoint.Options{
		SandboxID: sandboxID, Dir: dir, TaskDir: node.TaskDir(), PodDirs: node.PodDirs(),
		Kind: kind, LeaveRunning: r.GetLeaveRunning(), Compress: r.GetCompress(), CopyMounts: mounts, Key: s.cfg.Key,
		MaxCopyBytes: s.cfg.MaxCopyBytes,
	})
	if err != nil {
		s.cfg.Log.Error("Checkpoint failed", "namespace", r.GetNamespace(), "pod", r.GetPod(), "snapshot", r.GetSnapshot(), "err", err)
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("checkpoint of Pod %s/%s: %w "+
			"(a Pod is checkpointed only under gVisor, RuntimeClass handler runsc)", r.GetNamespace(), r.GetPod(), err))
	}
	s.cfg.Log.Info("Checkpoint", "namespace", r.GetNamespace(), "pod", r.GetPod(), "snapshot", r.GetSnapshot(),
		"bytes", m.Size, "took", time.Since(start))
	snap := snapshotOf(r.GetNamespace(), r.GetSnapshot(), dir, m)
	snap.Stored = s.put(ctx, snap, dir)
	return connect.NewResponse(&nodev1.CheckpointResponse{Snapshot: snap}), nil
}

// existing answers a Checkpoint whose snapshot folder exists: with the snapshot, when it is a
// complete one of the Pod with the request's pod_uid (a retry), and AlreadyExists otherwise.
func (s *Server) existing(ctx context.Context, r *nodev1.CheckpointRequest, dir string) (*connect.Response[nodev1.CheckpointResponse], error) {
	m, err := s.cfg.Key.Verify(dir, r.GetNamespace(), r.GetSnapshot())
	if err == nil && r.GetPodUid() != "" && m.Pod.UID == r.GetPodUid() && m.Pod.Name == r.GetPod() {
		snap := snapshotOf(r.GetNamespace(), r.GetSnapshot(), dir, m)
		snap.Stored = s.put(ctx, snap, dir)
		return connect.NewResponse(&nodev1.CheckpointResponse{Snapshot: snap}), nil
	}
	return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("snapshot %s/%s exists on this node and is not "+
		"a snapshot of Pod %s with UID %q: choose another name, or delete it first", r.GetNamespace(), r.GetSnapshot(), r.GetPod(), r.GetPodUid()))
}

// DeleteSnapshot implements nodev1connect.SnapshotServiceHandler.
func (s *Server) DeleteSnapshot(ctx context.Context, req *connect.Request[nodev1.DeleteSnapshotRequest]) (*connect.Response[nodev1.DeleteSnapshotResponse], error) {
	dir, release, err := s.claim(req.Msg.GetNamespace(), req.Msg.GetSnapshot())
	if err != nil {
		return nil, err
	}
	defer release()
	if err := os.RemoveAll(dir); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	if err := os.Remove(fetchedMarker(dir)); err != nil && !os.IsNotExist(err) {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	if s.cfg.Store != nil {
		if err := s.cfg.Store.Delete(ctx, req.Msg.GetNamespace(), req.Msg.GetSnapshot()); err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("deleting snapshot %s/%s from the snapshot store: %w",
				req.Msg.GetNamespace(), req.Msg.GetSnapshot(), err))
		}
	}
	return connect.NewResponse(&nodev1.DeleteSnapshotResponse{}), nil
}

// claim returns the folder of the snapshot namespace/snapshot, marked busy until release: two
// calls for one snapshot do not race. The names must be DNS labels, so the folder is always one
// below the namespace's.
func (s *Server) claim(namespace, snapshot string) (dir string, release func(), err error) {
	if dir, err = s.snapshotDir(namespace, snapshot); err != nil {
		return "", nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy[dir] {
		return "", nil, connect.NewError(connect.CodeAborted, fmt.Errorf("snapshot %s/%s is being written or deleted: try again once that call returns", namespace, snapshot))
	}
	s.busy[dir] = true
	return dir, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.busy, dir)
	}, nil
}

// snapshotDir is the folder of the snapshot namespace/snapshot, whose names must be DNS labels.
func (s *Server) snapshotDir(namespace, snapshot string) (string, error) {
	if err := validName("namespace", namespace, validation.IsDNS1123Label); err != nil {
		return "", err
	}
	if err := validName("snapshot", snapshot, validation.IsDNS1123Label); err != nil {
		return "", err
	}
	return filepath.Join(s.cfg.SnapshotRoot, namespace, snapshot), nil
}

func validName(what, name string, check func(string) []string) error {
	if problems := check(name); len(problems) > 0 {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s %q: %s", what, name, strings.Join(problems, "; ")))
	}
	return nil
}

// copyMounts checks the volume mounts a checkpoint is to copy: a container name and an absolute,
// clean path each.
func copyMounts(in []*nodev1.VolumeMount) ([]checkpoint.MountRef, error) {
	var out []checkpoint.MountRef
	for _, m := range in {
		if err := validName("container", m.GetContainer(), validation.IsDNS1123Label); err != nil {
			return nil, err
		}
		if p := m.GetPath(); !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("volume mount path %q of container %s: want an absolute, clean path", p, m.GetContainer()))
		}
		out = append(out, checkpoint.MountRef{Container: m.GetContainer(), Path: m.GetPath()})
	}
	return out, nil
}

func kindOf(k nodev1.Kind) (checkpoint.Kind, error) {
	switch k {
	case nodev1.Kind_KIND_UNSPECIFIED, nodev1.Kind_KIND_FULL:
		return checkpoint.Full, nil
	case nodev1.Kind_KIND_FILESYSTEM:
		return checkpoint.Filesystem, nil
	}
	return "", connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("kind %v: use KIND_FULL or KIND_FILESYSTEM", k))
}

func snapshotOf(namespace, name, dir string, m *checkpoint.Manifest) *nodev1.Snapshot {
	kind := nodev1.Kind_KIND_FULL
	if m.Kind == checkpoint.Filesystem {
		kind = nodev1.Kind_KIND_FILESYSTEM
	}
	var containers []string
	for _, c := range m.Containers {
		if !c.Sandbox {
			containers = append(containers, c.Name)
		}
	}
	return &nodev1.Snapshot{
		Namespace: namespace, Name: name, Kind: kind, Image: checkpoint.ImagePath(dir),
		SizeBytes: m.Size, Sha256: m.SHA256, Duration: durationpb.New(time.Duration(m.Duration)),
		CreateTime: timestamppb.New(m.Created), Containers: containers, RunscVersion: m.Runsc,
	}
}
