package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// defaultContainerAnnotation names the container kubectl logs and exec pick by default; kubox
// sets it on Pods that run kubox-agent.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

type logsOptions struct {
	target
	follow    bool
	container string
	tail      int64
	previous  bool
	egress    bool
	egressNS  string
	egressLog string
}

func newLogs(g *globalOptions) *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the logs of a sandbox's Pod",
		Long: `Print the logs of the Pod of the Sandbox NAME (with --claim, the sandbox of the claim NAME),
read from the API server as kubectl logs does. The container is -c, else the Pod's
kubectl.kubernetes.io/default-container, else its first container. With --egress, the audit lines
kubox-egress wrote about the sandbox's outbound connections instead (docs/egress.md): from its
Pods, or from its log file on the local node of kubox dev, where it runs on the node.`,
		Example: `  kubox logs python-x7k2q
  kubox logs --claim kubox-x7k2 -f --tail 20
  kubox logs python-x7k2q -c sidecar
  kubox logs --egress --claim kubox-x7k2`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(g, &o.target, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, g, args[0])
		},
	}
	o.addFlag(cmd.Flags())
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep streaming new lines until the Pod stops or Ctrl-C")
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "container to read (default: the Pod's default container)")
	cmd.Flags().Int64Var(&o.tail, "tail", -1, "number of recent lines to print; -1 prints all")
	cmd.Flags().BoolVarP(&o.previous, "previous", "p", false, "print the logs of the container's previous run (after a restart)")
	cmd.Flags().BoolVar(&o.egress, "egress", false, "print kubox-egress's audit lines about the sandbox's outbound connections (JSON, one per connection or request)")
	cmd.Flags().StringVar(&o.egressNS, "egress-namespace", contract.DefaultRouterNamespace, "namespace of kubox-egress (with --egress)")
	cmd.Flags().StringVar(&o.egressLog, "egress-log", "", "read kubox-egress's log from this file instead of its Pods (with --egress), for a kubox-egress outside the cluster; the local node's (kubox dev) is read by default when no kubox-egress Pod runs")
	return cmd
}

func (o *logsOptions) run(cmd *cobra.Command, g *globalOptions, name string) error {
	ctx := cmd.Context()
	cs, err := g.clientset()
	if err != nil {
		return err
	}
	c, ns, sbName, err := g.resolve(ctx, o.target, name)
	if err != nil {
		return err
	}
	if o.egress {
		return egressLogs(ctx, cs, ns, sbName, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
	}
	sb, err := getSandbox(ctx, c, ns, sbName)
	if err != nil {
		return err
	}
	return streamLogs(ctx, cs, podName(sb), ns, o, cmd.OutOrStdout())
}

// podName is the name of the sandbox's Pod: its pod-name annotation (an adopted Pod), else the
// sandbox's own name.
func podName(sb *sandboxv1beta1.Sandbox) string {
	if n := sb.Annotations[sandboxv1beta1.PodNameAnnotation]; n != "" {
		return n
	}
	return sb.Name
}

func streamLogs(ctx context.Context, cs kubernetes.Interface, pod, ns string, o *logsOptions, w io.Writer) error {
	p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%w (a suspended sandbox has no Pod: kubox resume it first)", apiError(err, "Pod", ns, pod))
	}
	container := o.container
	if container == "" {
		container = defaultContainer(p)
	}
	opts := &corev1.PodLogOptions{Container: container, Follow: o.follow, Previous: o.previous}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	rc, err := cs.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("reading the logs of container %s of Pod %s in namespace %s: %w", container, pod, ns, err)
	}
	defer func() { _ = rc.Close() }()
	if _, err := io.Copy(w, rc); err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the logs of Pod %s: %w", pod, err)
	}
	return nil
}

// defaultContainer is the container kubectl would pick: the annotated default, else the first.
func defaultContainer(p *corev1.Pod) string {
	if c := p.Annotations[defaultContainerAnnotation]; c != "" {
		return c
	}
	if len(p.Spec.Containers) > 0 {
		return p.Spec.Containers[0].Name
	}
	return ""
}
