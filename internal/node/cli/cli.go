// Package cli is kubox-node's command: its flags, and the start-up that wires the snapshot
// service (internal/node/server) to checkpointing, the store, the node key and TLS.
package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/nodekey"
	"github.com/kubox-dev/kubox/internal/node/nodetls"
	"github.com/kubox-dev/kubox/internal/node/server"
	"github.com/kubox-dev/kubox/internal/objstore"
	"github.com/kubox-dev/kubox/internal/version"
)

type options struct {
	addr, tokenFile, snapshotRoot, snapshotStore string
	sweepInterval                                time.Duration
	maxCopyBytes                                 int64
	node                                         checkpoint.Node
	// manifestKeyFile, manifestKeySecret, namespace, kubeconfig: the manifest key (keyOf).
	manifestKeyFile, manifestKeySecret, namespace, kubeconfig string
	// s3: the S3 snapshot store, with --snapshot-store=s3 (storeOf).
	s3 objstore.Config
}

// NewCommand returns the kubox-node command.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "kubox-node --token-file=FILE --snapshot-root=DIR [flags]",
		Short: "Checkpoint the gVisor Pods of this node into snapshots that new Pods restore from",
		Long: `kubox-node checkpoints the gVisor sandbox of a Pod running on this node into a snapshot below
--snapshot-root/<namespace>/<snapshot> and verifies it, for kubox's patched gVisor shim to restore
new Pods from (the Pod annotation kubox.dev/restore-image). --snapshot-root must be the shim's
kubox_snapshot_root. With --snapshot-store, each snapshot is also copied to that shared folder,
and a snapshot a restore needs that this node lacks is fetched from it first. The API is served
over TLS only, with a certificate whose key is derived from the node token (docs/security.md), and
every call needs "Authorization: Bearer <token>" with the token in --token-file, which is read
again when it changes.`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "api-bind-address", fmt.Sprintf(":%d", contract.DefaultNodeAPIPort), "address of the snapshot API")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the node token callers must present (required)")
	f.StringVar(&o.snapshotRoot, "snapshot-root", "", "folder of the snapshots, one folder per namespace: the gVisor shim's kubox_snapshot_root (required)")
	f.StringVar(&o.snapshotStore, "snapshot-store", "", "folder of a filesystem every node mounts (a ReadWriteMany PersistentVolume), or s3 for the bucket the --snapshot-store-s3-* flags name (docs/snapshot-store.md): each snapshot is copied there, and a node restoring one it lacks fetches it from there; empty: snapshots stay on the node that took them")
	o.addS3Flags(f)
	f.DurationVar(&o.sweepInterval, "sweep-interval", 10*time.Minute, "with --snapshot-store, how often to remove the snapshots this node fetched from the store that the store no longer holds")
	f.Int64Var(&o.maxCopyBytes, "max-copy-bytes", checkpoint.DefaultMaxCopyBytes, "the most bytes a checkpoint copies from a Pod's mounts (emptyDirs, subPaths, its own volumes), all together; each file, folder and link counts 4096 bytes besides its content")
	f.StringVar(&o.manifestKeyFile, "manifest-key-file", "", "file on the host, outside every folder a Pod mounts and outside the snapshot root and store, where kubox-node writes (root only) the key it signs snapshot manifests with: the gVisor shim's kubox_manifest_key (required)")
	f.StringVar(&o.manifestKeySecret, "manifest-key-secret", "", "Secret of --namespace holding the manifest key every node sharing the snapshot store uses; kubox-node creates it with a random key when absent; empty: the key in --manifest-key-file, or a new one there (one node only)")
	f.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "kubox-node's namespace, of --manifest-key-secret")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for --manifest-key-secret; empty: the in-cluster configuration")
	f.StringVar(&o.node.Runsc, "runsc", "runsc", "the runsc binary the gVisor shim runs")
	f.StringVar(&o.node.ShimRunscRoot, "runsc-root", "/run/containerd/runsc", "the root in the gVisor shim's options (runsc.toml's root)")
	f.StringVar(&o.node.ContainerdRoot, "containerd-root", "/var/lib/containerd", "containerd's root folder")
	f.StringVar(&o.node.ContainerdState, "containerd-state", "/run/containerd", "containerd's state folder")
	f.StringVar(&o.node.KubeletRoot, "kubelet-root", "/var/lib/kubelet", "the kubelet's --root-dir")
	cmd.AddCommand(newInstallCommands()...)
	return cmd
}

func (o *options) run(ctx context.Context) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "kubox-node")
	if o.tokenFile == "" {
		return errors.New("--token-file is required: the node token callers must present")
	}
	tok, err := auth.WatchFile(o.tokenFile)
	if err != nil {
		return err
	}
	if o.maxCopyBytes <= 0 {
		return fmt.Errorf("--max-copy-bytes %d must be positive", o.maxCopyBytes)
	}
	key, err := o.keyOf(ctx)
	if err != nil {
		return err
	}
	cfg := server.Config{Node: o.node, SnapshotRoot: o.snapshotRoot, Token: tok, Log: log, MaxCopyBytes: o.maxCopyBytes, Key: key}
	if cfg.Store, err = o.storeOf(key); err != nil {
		return err
	}
	s, err := server.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if o.sweepInterval <= 0 {
		return fmt.Errorf("--sweep-interval %s must be positive", o.sweepInterval)
	}
	go s.Sweep(ctx, o.sweepInterval)
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("--api-bind-address %s: %w", o.addr, err)
	}
	log.Info("Starting", "version", version.Get().GitVersion, "api", "https://"+l.Addr().String(), "snapshotRoot", o.snapshotRoot, "snapshotStore", o.snapshotStore)
	return s.Serve(ctx, l, nodetls.ServerConfig(func() ([]byte, error) { return auth.LoadToken(o.tokenFile, "") }))
}

// keyOf returns the key snapshot manifests are signed with, written to --manifest-key-file for
// the gVisor shim (package nodekey).
func (o *options) keyOf(ctx context.Context) (checkpoint.Key, error) {
	if o.manifestKeyFile == "" || !filepath.IsAbs(o.manifestKeyFile) {
		return nil, fmt.Errorf("--manifest-key-file %q must be an absolute path: the gVisor shim's kubox_manifest_key", o.manifestKeyFile)
	}
	if o.manifestKeySecret == "" {
		return nodekey.FromFile(o.manifestKeyFile)
	}
	if o.namespace == "" {
		return nil, errors.New("--manifest-key-secret needs --namespace (or POD_NAMESPACE): kubox-node's namespace")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the API server for --manifest-key-secret: %w", err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return nodekey.FromSecret(ctx, c.CoreV1().Secrets(o.namespace), o.manifestKeySecret, o.manifestKeyFile)
}
