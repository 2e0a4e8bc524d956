package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubox-dev/kubox/internal/node/install"
)

// ReadyLabel is set on a Node (value "ready") once its containerd runs the kubox-runsc handler.
const ReadyLabel = "kubox.dev/memory-sandboxes"

// ReadyCondition is the Node condition install sets: True once the handler is installed and
// containerd answers, False with the reason and the fix when install failed on the node.
const ReadyCondition corev1.NodeConditionType = "KuboxMemorySandboxes"

type installOptions struct {
	hostRoot, binDir, nodeName, kubeconfig, socket string
	containerd                                     install.Containerd
	restart                                        []string
	// containerdTimeout bounds the wait for containerd to answer after a restart; poll is the
	// time between two checks.
	containerdTimeout, poll time.Duration
	// client, run and answers reach the API server, run the restart command and ask containerd
	// whether it serves; tests replace them.
	client  func() (kubernetes.Interface, error)
	run     func(ctx context.Context, argv []string) ([]byte, error)
	answers func(ctx context.Context) error
	// force, wait, backoff: uninstall's --force and --wait, and the first and longest wait
	// between two checks for kubox-runsc Pods.
	force, wait bool
	backoff     [2]time.Duration
}

func newInstallCommands() []*cobra.Command {
	o := &installOptions{poll: 500 * time.Millisecond, backoff: [2]time.Duration{5 * time.Second, time.Minute}}
	o.client = o.newClient
	o.run = func(ctx context.Context, argv []string) ([]byte, error) { return runOnHost(ctx, o.hostRoot, argv) }
	o.answers = func(ctx context.Context) error { return containerdAnswers(ctx, o.socket) }
	in := &cobra.Command{
		Use:   "install",
		Short: "Put kubox's runsc and gVisor shim on this node and register the kubox-runsc runtime handler",
		Long: `install copies runsc and containerd-shim-runsc-v1 from --bin-dir to /opt/kubox/bin on the host,
writes the containerd drop-in /opt/kubox/etc/containerd-kubox-runsc.toml, adds it to the imports of
containerd's config when absent (keeping the original bytes for uninstall), restarts containerd
when anything changed (running Pods keep running: their shims are separate processes), waits until
containerd answers on its socket again, then labels the Node ` + ReadyLabel + `=ready and sets its
condition ` + string(ReadyCondition) + ` (docs/install.md).`,
		SilenceUsage: true, SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.install(cmd.Context()) },
	}
	un := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove the kubox-runsc handler and restore containerd's original config byte-for-byte",
		Long: `uninstall first lists the Pods of its Node (--node-name) whose RuntimeClass has the handler
` + install.Handler + ` and that have not terminated: while any is left it removes nothing and exits
non-zero naming them (containerd without the handler and its shim cannot stop them), or with --wait
checks again with a backoff until they are gone. Then it removes the Node's label ` + ReadyLabel + `
and condition ` + string(ReadyCondition) + `, checks again, restores containerd's config
byte-for-byte, removes the drop-in and the binaries, restarts containerd and waits until it
answers (docs/install.md).`,
		SilenceUsage: true, SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.uninstall(cmd.Context()) },
	}
	for _, c := range []*cobra.Command{in, un} {
		f := c.Flags()
		f.StringVar(&o.hostRoot, "host-root", "/host", "where the node's root filesystem is mounted")
		f.StringVar(&o.containerd.Config, "containerd-config", install.DefaultContainerdConfig, "containerd's config, relative to --host-root")
		f.StringVar(&o.socket, "containerd-socket", "/run/containerd/containerd.sock", "containerd's socket, asked whether containerd answers after its restart")
		f.DurationVar(&o.containerdTimeout, "containerd-timeout", 2*time.Minute, "how long to wait for containerd to answer after its restart")
		f.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "this Node's name, labelled "+ReadyLabel)
		f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig; empty: in-cluster")
		f.StringSliceVar(&o.restart, "restart-containerd", []string{"systemctl", "restart", "containerd"}, "command restarting the host's containerd, run in the host's root filesystem (--host-root) with the host's PATH; empty: never restart")
	}
	un.Flags().BoolVar(&o.force, "force", false, "remove the handler even while Pods of this node run on it: those Pods are left unstoppable (their cgroups stay busy) until the node reboots")
	un.Flags().BoolVar(&o.wait, "wait", false, "while Pods of this node run on the handler, check again (every 5s, doubling up to 1m) until they are gone, instead of exiting non-zero at once")
	in.Flags().StringVar(&o.binDir, "bin-dir", "/opt/kubox-node/bin", "folder of kubox-node's image holding runsc and containerd-shim-runsc-v1")
	in.Flags().StringVar(&o.containerd.SnapshotRoot, "snapshot-root", "/var/lib/kubox/snapshots", "the shim's kubox_snapshot_root: kubox-node's --snapshot-root")
	in.Flags().StringVar(&o.containerd.RunscRoot, "runsc-root", "", "runsc's root in the shim's runsc.toml: kubox-node's --runsc-root; empty: the shim's default /run/containerd/runsc")
	in.Flags().StringVar(&o.containerd.ManifestKey, "manifest-key-file", "/var/lib/kubox/manifest-key/manifest.key", "the shim's kubox_manifest_key: kubox-node's --manifest-key-file")
	return []*cobra.Command{in, un}
}

// install puts the handler on the node and says so on the Node only once containerd answers
// with it; a failure is written to the Node's condition too, where `kubectl describe node` shows it.
func (o *installOptions) install(ctx context.Context) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	if err := o.installOnHost(ctx); err != nil {
		reason := "InstallFailed"
		if _, ok := err.(notAnswering); ok {
			reason = "ContainerdNotAnswering"
		}
		if cerr := o.setCondition(ctx, c, corev1.ConditionFalse, reason, err.Error()); cerr != nil {
			return fmt.Errorf("%w (and: %v)", err, cerr)
		}
		return err
	}
	if err := o.label(ctx, c, "ready"); err != nil {
		return err
	}
	return o.setCondition(ctx, c, corev1.ConditionTrue, "Installed",
		"containerd on this node runs the RuntimeClass "+install.Handler+" (kubox-node install)")
}

func (o *installOptions) installOnHost(ctx context.Context) error {
	o.containerd.HostRoot = o.hostRoot
	bins, err := install.CopyBinaries(o.hostRoot, o.binDir)
	if err != nil {
		return err
	}
	cfg, err := o.containerd.Install()
	if err != nil {
		return err
	}
	pending, err := o.containerd.RestartPending()
	if err != nil {
		return err
	}
	if !bins && !cfg && !pending {
		return o.waitForContainerd(ctx)
	}
	if err := o.containerd.MarkRestart(); err != nil {
		return err
	}
	if err := o.restartContainerd(ctx); err != nil {
		return err
	}
	if err := o.waitForContainerd(ctx); err != nil {
		return err
	}
	return o.containerd.RestartDone()
}

// uninstall removes nothing while a Pod of the node runs on the handler (checkNoSandboxes). It
// takes the label and condition away first, so nothing new is scheduled on the handler, checks
// again for a Pod bound meanwhile, then restores containerd's config and restarts it.
func (o *installOptions) uninstall(ctx context.Context) error {
	o.containerd.HostRoot = o.hostRoot
	c, err := o.client()
	if err != nil {
		return err
	}
	if err := o.checkNoSandboxes(ctx, c); err != nil {
		return err
	}
	if err := o.label(ctx, c, ""); err != nil {
		return err
	}
	if err := o.removeCondition(ctx, c); err != nil {
		return err
	}
	if err := o.checkNoSandboxes(ctx, c); err != nil {
		return err
	}
	if err := o.containerd.Uninstall(); err != nil {
		return err
	}
	if err := o.restartContainerd(ctx); err != nil {
		return err
	}
	if err := o.waitForContainerd(ctx); err != nil {
		return err
	}
	return install.RemoveBinaries(o.hostRoot)
}

// logf writes a line of progress to stderr, which kubectl logs shows.
func (o *installOptions) logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "kubox-node: "+format+"\n", a...)
}

// hostPath is the PATH a restart command is looked up in on the host.
const hostPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runOnHost runs argv in the host's root filesystem (chrooted into hostRoot, the host's PATH):
// kubox-node's image holds no shell, no systemctl and no nsenter, the host does.
func runOnHost(ctx context.Context, hostRoot string, argv []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `exec "$@"`, "sh"}, argv...)...)
	cmd.Env, cmd.Dir = []string{hostPath}, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: hostRoot}
	return cmd.CombinedOutput()
}

func (o *installOptions) restartContainerd(ctx context.Context) error {
	if len(o.restart) == 0 {
		return nil
	}
	out, err := o.run(ctx, o.restart)
	if err != nil {
		return fmt.Errorf("restart containerd on node %s with %q: %w: %s; restart it by hand, then run kubox-node install again", o.nodeName, o.restart, err, out)
	}
	return nil
}

// notAnswering is the error of a containerd that did not answer in time.
type notAnswering struct{ error }

// waitForContainerd returns once containerd answers on its socket, or notAnswering after
// containerdTimeout.
func (o *installOptions) waitForContainerd(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.containerdTimeout)
	defer cancel()
	for {
		err := o.answers(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return notAnswering{fmt.Errorf("containerd on node %s does not answer on %s after %s: %w; see journalctl -u containerd on the node, fix containerd, then restart the kubox-node Pod",
				o.nodeName, o.socket, o.containerdTimeout, err)}
		case <-time.After(o.poll):
		}
	}
}

// containerdAnswers asks containerd's gRPC health service on socket whether it serves.
func containerdAnswers(ctx context.Context, socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("containerd reports %s", r.GetStatus())
	}
	return nil
}

func (o *installOptions) newClient() (kubernetes.Interface, error) {
	if o.nodeName == "" {
		return nil, fmt.Errorf("no Node name: set --node-name or NODE_NAME (the DaemonSet passes spec.nodeName)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return kubernetes.NewForConfig(rc)
}

// label sets ReadyLabel on the Node to value, or removes it when value is empty.
func (o *installOptions) label(ctx context.Context, c kubernetes.Interface, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{ReadyLabel: v}}})
	if _, err := c.CoreV1().Nodes().Patch(ctx, o.nodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label Node %s %s: %w; %s", o.nodeName, ReadyLabel, err, apiFix(err, "nodes"))
	}
	return nil
}

func (o *installOptions) setCondition(ctx context.Context, c kubernetes.Interface, status corev1.ConditionStatus, reason, msg string) error {
	now := metav1.Now()
	return o.patchConditions(ctx, c, map[string]any{"type": ReadyCondition, "status": status, "reason": reason,
		"message": msg, "lastHeartbeatTime": now, "lastTransitionTime": now})
}

func (o *installOptions) removeCondition(ctx context.Context, c kubernetes.Interface) error {
	return o.patchConditions(ctx, c, map[string]any{"type": ReadyCondition, "$patch": "delete"})
}

// patchConditions merges cond into the Node's status conditions by type (a strategic merge
// patch: the kubelet's own conditions are left alone).
func (o *installOptions) patchConditions(ctx context.Context, c kubernetes.Interface, cond map[string]any) error {
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{cond}}})
	_, err := c.CoreV1().Nodes().Patch(ctx, o.nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("set condition %s on Node %s: %w; %s", ReadyCondition, o.nodeName, err, apiFix(err, "nodes/status"))
	}
	return nil
}

// apiFix is the fix for a Node patch that failed with err: the RBAC rule when the API server
// refused it, else the way to the API server.
func apiFix(err error, resource string) string {
	if apierrors.IsForbidden(err) {
		return "kubox-node's ClusterRole must allow patching " + resource + " (config/node/rbac.yaml)"
	}
	return "check that the Pod can reach the API server (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT)"
}
