package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubox-dev/kubox/internal/node/install"
)

// ReadyLabel is set on a Node (value "ready") once its containerd runs the kubox-runsc handler.
const ReadyLabel = "kubox.dev/memory-sandboxes"

type installOptions struct {
	hostRoot, binDir, nodeName, kubeconfig string
	containerd                             install.Containerd
	restart                                []string
}

func newInstallCommands() []*cobra.Command {
	o := &installOptions{}
	in := &cobra.Command{
		Use:   "install",
		Short: "Put kubox's runsc and gVisor shim on this node and register the kubox-runsc runtime handler",
		Long: `install copies runsc and containerd-shim-runsc-v1 from --bin-dir to /opt/kubox/bin on the host,
writes the containerd drop-in /opt/kubox/etc/containerd-kubox-runsc.toml, adds it to the imports of
containerd's config when absent (keeping the original bytes for uninstall), restarts containerd
when anything changed (running Pods keep running: their shims are separate processes), and labels
the Node ` + ReadyLabel + `=ready (docs/install.md).`,
		SilenceUsage: true, SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.install(cmd.Context()) },
	}
	un := &cobra.Command{
		Use:          "uninstall",
		Short:        "Remove the kubox-runsc handler and restore containerd's original config byte-for-byte",
		SilenceUsage: true, SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.uninstall(cmd.Context()) },
	}
	for _, c := range []*cobra.Command{in, un} {
		f := c.Flags()
		f.StringVar(&o.hostRoot, "host-root", "/host", "where the node's root filesystem is mounted")
		f.StringVar(&o.containerd.Config, "containerd-config", install.DefaultContainerdConfig, "containerd's config, relative to --host-root")
		f.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "this Node's name, labelled "+ReadyLabel)
		f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig; empty: in-cluster")
		f.StringSliceVar(&o.restart, "restart-containerd", []string{"nsenter", "--target=1", "--mount", "--", "systemctl", "restart", "containerd"}, "command restarting the host's containerd")
	}
	in.Flags().StringVar(&o.binDir, "bin-dir", "/opt/kubox-node/bin", "folder of kubox-node's image holding runsc and containerd-shim-runsc-v1")
	in.Flags().StringVar(&o.containerd.SnapshotRoot, "snapshot-root", "/var/lib/kubox/snapshots", "the shim's kubox_snapshot_root: kubox-node's --snapshot-root")
	in.Flags().StringVar(&o.containerd.ManifestKey, "manifest-key-file", "/var/lib/kubox/manifest-key/manifest.key", "the shim's kubox_manifest_key: kubox-node's --manifest-key-file")
	return []*cobra.Command{in, un}
}

func (o *installOptions) install(ctx context.Context) error {
	o.containerd.HostRoot = o.hostRoot
	bins, err := install.CopyBinaries(o.hostRoot, o.binDir)
	if err != nil {
		return err
	}
	cfg, err := o.containerd.Install()
	if err != nil {
		return err
	}
	if bins || cfg {
		if err := o.restartContainerd(ctx); err != nil {
			return err
		}
	}
	return o.label(ctx, "ready")
}

func (o *installOptions) uninstall(ctx context.Context) error {
	o.containerd.HostRoot = o.hostRoot
	if err := o.label(ctx, ""); err != nil {
		return err
	}
	if err := o.containerd.Uninstall(); err != nil {
		return err
	}
	return o.restartContainerd(ctx)
}

func (o *installOptions) restartContainerd(ctx context.Context) error {
	if len(o.restart) == 0 {
		return nil
	}
	out, err := exec.CommandContext(ctx, o.restart[0], o.restart[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("restart containerd with %q: %w: %s; restart it by hand, then run kubox-node install again", o.restart, err, out)
	}
	return nil
}

// label sets ReadyLabel on the Node to value, or removes it when value is empty.
func (o *installOptions) label(ctx context.Context, value string) error {
	if o.nodeName == "" {
		return fmt.Errorf("no Node name: set --node-name or NODE_NAME (the DaemonSet passes spec.nodeName)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	var v any = value
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{ReadyLabel: v}}})
	if _, err := c.CoreV1().Nodes().Patch(ctx, o.nodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label Node %s %s: %w; kubox-node's ClusterRole must allow patching nodes (config/node/rbac.yaml)", o.nodeName, ReadyLabel, err)
	}
	return nil
}
