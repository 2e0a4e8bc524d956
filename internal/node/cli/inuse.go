package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kubox-dev/kubox/internal/node/install"
)

// This file is uninstall's guard: containerd without the kubox-runsc handler and shim cannot stop
// a sandbox that runs on them (its Pod stays Terminating, "device or resource busy" on its
// cgroup), so uninstall removes nothing while such a Pod is on its node.

// SandboxesOnHandler returns the Pods of node (namespace/name, sorted) that are not terminated
// and run on kubox's runtime handler: the handler of their RuntimeClass, read from the
// RuntimeClass, never from the class's name or the Pod's labels, which say nothing about what
// containerd runs. A Pod whose RuntimeClass is gone is listed too, saying so: its handler cannot
// be told, and removing a handler it runs on would leave it unstoppable.
func SandboxesOnHandler(ctx context.Context, c kubernetes.Interface, node string) ([]string, error) {
	handlers := map[string]string{} // RuntimeClass name -> handler; "" when it is gone
	var out []string
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(), Limit: 500}
	for {
		pods, err := c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the Pods of node %s: %w; %s", node, err, apiFixFor(err, "list pods"))
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			// The field selector is the API server's; the check is ours too.
			if p.Spec.NodeName != node || terminated(p) || p.Spec.RuntimeClassName == nil {
				continue
			}
			class := *p.Spec.RuntimeClassName
			h, ok := handlers[class]
			if !ok {
				if h, err = handlerOf(ctx, c, class); err != nil {
					return nil, err
				}
				handlers[class] = h
			}
			switch key := p.Namespace + "/" + p.Name; h {
			case install.Handler:
				out = append(out, key)
			case "":
				out = append(out, fmt.Sprintf("%s (its RuntimeClass %s is gone, so its handler is unknown)", key, class))
			}
		}
		if opts.Continue = pods.Continue; opts.Continue == "" {
			break
		}
	}
	slices.Sort(out)
	return out, nil
}

// handlerOf is the handler of the RuntimeClass name, "" when it does not exist.
func handlerOf(ctx context.Context, c kubernetes.Interface, name string) (string, error) {
	rc, err := c.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read RuntimeClass %s: %w; %s", name, err, apiFixFor(err, "get runtimeclasses"))
	}
	return rc.Handler, nil
}

// terminated reports whether every container of p has ended for good (phase Succeeded or
// Failed): the kubelet has stopped its sandbox. A Pod being deleted is not: its sandbox is still
// to be stopped, by the handler's shim.
func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// apiFixFor is the fix for a failed read of the uninstall guard.
func apiFixFor(err error, rule string) string {
	if apierrors.IsForbidden(err) {
		return "the ServiceAccount kubox-node-uninstall must be allowed to " + rule + " (config/node/uninstall/rbac.yaml)"
	}
	return "check that the Pod can reach the API server (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT)"
}

// maxNamed is how many Pods a refusal names; the rest are counted.
const maxNamed = 20

// inUseError is uninstall's refusal: the Pods that run on the handler, and the fix.
func (o *installOptions) inUseError(pods []string) error {
	named := pods
	if len(named) > maxNamed {
		named = append(slices.Clone(pods[:maxNamed]), fmt.Sprintf("and %d more", len(pods)-maxNamed))
	}
	return fmt.Errorf("kubox-node uninstall on node %s removed nothing: %d Pod(s) still run on the %s runtime handler: %s. "+
		"Without the handler and its shim containerd cannot stop them (their cgroups stay busy). "+
		"Delete or suspend those sandboxes and wait until their Pods are gone, then run uninstall again "+
		"(kubectl get pods -A --field-selector spec.nodeName=%s lists them); --force removes the handler anyway and leaves them unstoppable",
		o.nodeName, len(pods), install.Handler, strings.Join(named, ", "), o.nodeName)
}

// checkNoSandboxes returns nil once no Pod of the node runs on the handler (at once with
// --force, which only logs them). Without --wait it returns the refusal at the first check; with
// it, it checks again after a wait that doubles from backoff[0] to backoff[1], logging each time.
func (o *installOptions) checkNoSandboxes(ctx context.Context, c kubernetes.Interface) error {
	delay := o.backoff[0]
	for {
		pods, err := SandboxesOnHandler(ctx, c, o.nodeName)
		if err != nil || len(pods) == 0 {
			return err
		}
		refusal := o.inUseError(pods)
		if o.force {
			o.logf("--force: removing the handler though Pods run on it, which are left unstoppable: %s", strings.Join(pods, ", "))
			return nil
		}
		if !o.wait {
			return refusal
		}
		o.logf("Waiting %s: %v", delay, refusal)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (stopped waiting: %v)", refusal, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, o.backoff[1])
	}
}
