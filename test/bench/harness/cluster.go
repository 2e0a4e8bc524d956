// Package harness runs a control plane for kubox's benchmarks: the repo's own kube-apiserver and
// etcd (through test/integration/framework), kube-scheduler, and kwok simulating nodes whose pods
// become Running and Ready with an IP a moment after they are scheduled. Everything listens on
// 127.0.0.1 or nowhere; every process is started here and stopped here, by PID.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

// Cluster is a running benchmark control plane.
type Cluster struct {
	*framework.Env
	dir   string
	procs []*exec.Cmd
}

// Options sizes the cluster.
type Options struct {
	// Nodes is the number of kwok nodes; each takes MaxPodsPerNode pods.
	Nodes          int
	MaxPodsPerNode int
	// ToolsDir finds kube-scheduler and kwok: hack/tools/install.sh dir <tool>.
	SchedulerBin, ControllerManagerBin, KwokBin, KwokStages string
}

// Start starts the control plane (the scheduler, the garbage collector and kwok next to the
// API server) and waits until every node is Ready and schedulable.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	env, err := framework.Start()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: env}
	if err := c.start(ctx, o); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, o Options) error {
	dir, err := os.MkdirTemp("", "kubox-bench-")
	if err != nil {
		return err
	}
	c.dir = dir
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, c.KubeConfig, 0o600); err != nil {
		return err
	}
	if err := c.spawn("kube-scheduler", o.SchedulerBin, "--kubeconfig="+kc, "--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc, "--authentication-skip-lookup", "--secure-port=0", "--leader-elect=false",
		"--kube-api-qps=2000", "--kube-api-burst=4000"); err != nil {
		return err
	}
	// The garbage collector only: deleting a claim deletes its sandbox, pod and volumes.
	if err := c.spawn("kube-controller-manager", o.ControllerManagerBin, "--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc, "--authentication-skip-lookup",
		"--secure-port=0", "--leader-elect=false", "--controllers=garbage-collector-controller",
		"--kube-api-qps=2000", "--kube-api-burst=4000"); err != nil {
		return err
	}
	if err := c.spawn("kwok", o.KwokBin, "--kubeconfig="+kc, "--config="+o.KwokStages, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--node-ip=127.0.0.1",
		"--cidr=10.244.0.0/16", "--node-lease-duration-seconds=40"); err != nil {
		return err
	}
	return c.addNodes(ctx, o.Nodes, o.MaxPodsPerNode)
}

// spawn starts one process with its output in <dir>/<name>.log and records it for Stop.
func (c *Cluster) spawn(name, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	c.procs = append(c.procs, cmd)
	return os.WriteFile(filepath.Join(c.dir, name+".pid"), fmt.Appendf(nil, "%d\n", cmd.Process.Pid), 0o600)
}

// addNodes creates kwok nodes, waits for kwok to report them Ready, and removes the not-ready
// taint the API server puts on new nodes (there is no node-lifecycle controller here to do it).
func (c *Cluster) addNodes(ctx context.Context, n, maxPods int) error {
	pods := resource.MustParse(fmt.Sprint(maxPods))
	for i := range n {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: pods, corev1.ResourceCPU: resource.MustParse("1000"),
				corev1.ResourceMemory: resource.MustParse("10Ti")}, Capacity: corev1.ResourceList{corev1.ResourcePods: pods,
				corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("10Ti")}},
		}
		if err := c.Client.Create(ctx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for i := range n {
		name := fmt.Sprintf("kwok-node-%d", i)
		for {
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
				return err
			}
			if nodeReady(node) {
				if len(node.Spec.Taints) > 0 {
					patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"taints":null}}`))
					if err := c.Client.Patch(ctx, node, patch); err != nil {
						return fmt.Errorf("untainting node %s: %w", name, err)
					}
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s not Ready after a minute; see %s", name, filepath.Join(c.dir, "kwok.log"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Stop stops kwok and the scheduler (by the PIDs this cluster started), then the API server and
// etcd, and removes the temporary folder unless KUBOX_BENCH_KEEP=1.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case err := <-done:
			logExit(p, err)
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			logExit(p, <-done)
		}
	}
	errs = append(errs, c.Env.Stop())
	if c.dir != "" && os.Getenv("KUBOX_BENCH_KEEP") != "1" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

// Tool returns the path of a tool from hack/tools/install.sh's cache.
func Tool(repo, tool, file string) (string, error) {
	out, err := exec.Command(filepath.Join(repo, "hack", "tools", "install.sh"), "dir", tool).Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools/install.sh dir %s: %w", tool, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), file), nil
}

// logExit ignores the exit status of a process stopped by a signal: it is expected.
func logExit(p *exec.Cmd, err error) {
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintf(os.Stderr, "waiting for %s: %v\n", p.Path, err)
	}
}

// AddNode adds one more kwok node that takes maxPods pods, gives them IPs from podCIDR (kwok
// uses a node's spec.podCIDR when it has one) and has taint, and waits until it is Ready.
func (c *Cluster) AddNode(ctx context.Context, name string, maxPods int, podCIDR string, taint corev1.Taint) error {
	pods := resource.MustParse(fmt.Sprint(maxPods))
	capacity := corev1.ResourceList{corev1.ResourcePods: pods, corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("10Ti")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}},
		Spec:   corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
		Status: corev1.NodeStatus{Allocatable: capacity, Capacity: capacity},
	}
	if err := c.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := c.Client.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
			return err
		}
		if nodeReady(node) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready after a minute; see %s", name, filepath.Join(c.dir, "kwok.log"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	taints, err := json.Marshal([]corev1.Taint{taint})
	if err != nil {
		return err
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"taints":%s}}`, taints))
	if err := c.Client.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("tainting node %s: %w", name, err)
	}
	return nil
}

// ToolOptions returns Options with the binaries of hack/tools/install.sh's cache (kube-scheduler,
// kube-controller-manager, kwok and kwok's stages), for nodes of maxPods pods each.
func ToolOptions(repo string, nodes, maxPods int) (Options, error) {
	o := Options{Nodes: nodes, MaxPodsPerNode: maxPods}
	for _, t := range []struct {
		dst        *string
		tool, file string
	}{
		{&o.SchedulerBin, "kubernetes", "kube-scheduler"},
		{&o.ControllerManagerBin, "kubernetes", "kube-controller-manager"},
		{&o.KwokBin, "kwok", "kwok"},
		{&o.KwokStages, "kwok", "kwok-stages.yaml"},
	} {
		p, err := Tool(repo, t.tool, t.file)
		if err != nil {
			return o, err
		}
		*t.dst = p
	}
	return o, nil
}
