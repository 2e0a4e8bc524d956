package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Down stops every process the environment started (by the PIDs it recorded), removes the pods'
// sandboxes first so the CNI releases their network namespaces, unmounts what is mounted below
// the state directory, deletes the bridge, the cgroup subtree and the provisioned volumes, and
// finally the state directory. It is safe to run on a half-started or crashed environment.
func Down(ctx context.Context, c Config, out io.Writer) error {
	p := NewProgress(out)
	l := NewLayout(c.StateDir)
	if _, err := os.Stat(l.Root); err != nil {
		p.Say("nothing to do: no environment in %s", l.Root)
		return nil
	}
	var errs []error
	stop := func(name string) { errs = append(errs, stopComponent(p, l, name)) }
	errs = append(errs, kuboxModeOf(c, l).stop(ctx, p, l))
	stop(Router)
	stop(Controller)
	stop(Egress)
	stop(NodeAPI)
	stop(ControllerManager)
	stop(Scheduler)
	volumes := drainPods(ctx, p, l, c)
	stop(Kubelet)
	errs = append(errs, removeContainers(p, l))
	stop(Containerd)
	errs = append(errs, stopShims(p, l))
	// after the Pods are gone; on SIGTERM it deletes its nftables table
	stop(NetworkPolicies)
	stop(APIServer)
	stop(Etcd)
	errs = append(errs, cleanupHost(p, c, l, volumes))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kubox dev down left something behind (state kept in %s):\n%w", l.Root, err)
	}
	p.Say("kubox dev is down; %s removed", l.Root)
	return nil
}

func stopComponent(p *Progress, l Layout, name string) error {
	proc, ok, err := ReadPidFile(l.PidFile(name))
	if err != nil || !ok {
		return err
	}
	if !proc.Alive() {
		return os.Remove(l.PidFile(name))
	}
	if err := proc.Stop(10 * time.Second); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	p.Say("stopped %s (pid %d)", name, proc.PID)
	return os.Remove(l.PidFile(name))
}

// drainPods deletes every pod through the API while the kubelet still runs, so the kubelet stops
// the sandboxes and the CNI removes their network. It returns the host paths of provisioned PVs.
func drainPods(ctx context.Context, p *Progress, l Layout, c Config) []string {
	cs, err := NewClient(l.Kubeconfig)
	if err != nil || !aliveComponent(l, APIServer) {
		return nil
	}
	vols := hostPathVolumes(ctx, cs)
	if !aliveComponent(l, Kubelet) {
		return vols
	}
	grace := int64(1)
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) == 0 {
		return vols
	}
	for _, pod := range pods.Items {
		_ = cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	}
	err = Poll(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		left, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err == nil && len(left.Items) == 0, err
	})
	if err != nil {
		p.Say("some pods did not terminate (%v); removing their containers directly", err)
	} else {
		p.Say("deleted %d pod(s) through the kubelet", len(pods.Items))
	}
	return vols
}

// hostPathRoot is where kube-controller-manager's hostPath provisioner creates volumes.
const hostPathRoot = "/tmp/hostpath_pv"

// hostPathVolumes lists the directories the hostPath provisioner created for this cluster.
func hostPathVolumes(ctx context.Context, cs kubernetes.Interface) []string {
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, pv := range pvs.Items {
		if isProvisionedHostPath(pv) {
			out = append(out, pv.Spec.HostPath.Path)
		}
	}
	return out
}

func isProvisionedHostPath(pv corev1.PersistentVolume) bool {
	return pv.Spec.HostPath != nil && pv.Annotations["pv.kubernetes.io/provisioned-by"] == "kubernetes.io/host-path" &&
		strings.HasPrefix(pv.Spec.HostPath.Path, hostPathRoot+"/")
}

func aliveComponent(l Layout, name string) bool {
	proc, ok, _ := ReadPidFile(l.PidFile(name))
	return ok && proc.Alive()
}

// ctrDeleteTimeout bounds the ctr commands that remove one leftover container.
const ctrDeleteTimeout = 20 * time.Second

// removeContainers kills and deletes whatever containerd still runs (pods the kubelet did not
// stop), so every shim exits.
func removeContainers(p *Progress, l Layout) error {
	if !aliveComponent(l, Containerd) {
		return nil
	}
	ctr := filepath.Join(l.Bin, "ctr")
	ids, err := ctrRun(ctr, l, "containers", "ls", "-q")
	if err != nil {
		return err
	}
	n := 0
	for _, id := range strings.Fields(ids) {
		// bounded: a shim that never reports its task exited makes `tasks delete` wait forever
		// (seen with a gVisor sandbox whose start failed); stopShims kills such shims next
		ctx, cancel := context.WithTimeout(context.Background(), ctrDeleteTimeout)
		_, _ = ctrRunContext(ctx, ctr, l, "tasks", "kill", "-s", "SIGKILL", id)
		_, _ = ctrRunContext(ctx, ctr, l, "tasks", "delete", "-f", id)
		if _, err := ctrRunContext(ctx, ctr, l, "containers", "delete", id); err != nil {
			p.Say("could not delete container %s: %v", id, err)
		}
		cancel()
		n++
	}
	if n > 0 {
		p.Say("removed %d container(s) from containerd", n)
	}
	return nil
}

// stopShims stops shims containerd left behind, by the PIDs containerd recorded (shim.pid in each
// task bundle below the state directory).
func stopShims(p *Progress, l Layout) error {
	pidfiles, _ := filepath.Glob(filepath.Join(l.ContainerdState, "io.containerd.runtime.v2.task", "*", "*", "shim.pid"))
	var errs []error
	for _, f := range pidfiles {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var proc Proc
		if _, err := fmt.Sscanf(string(data), "%d", &proc.PID); err != nil || !ownedBy(proc.PID, l.Root) {
			continue
		}
		if err := proc.Stop(5 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("stop shim %s: %w", f, err))
			continue
		}
		p.Say("stopped a leftover shim (pid %d)", proc.PID)
	}
	return errors.Join(errs...)
}

// ownedBy reports whether pid's command line names the state directory (a shim's -address), so
// a reused PID is never signalled.
func ownedBy(pid int, stateDir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), stateDir)
}

func cleanupHost(p *Progress, c Config, l Layout, volumes []string) error {
	var errs []error
	if err := Unmount(l.Root); err != nil {
		errs = append(errs, err)
	}
	if err := RemoveCgroups(c.CgroupRoot); err != nil {
		errs = append(errs, err)
	}
	if err := RemoveBridge(c.Bridge); err != nil {
		errs = append(errs, err)
	}
	for _, v := range volumes {
		if err := os.RemoveAll(v); err != nil {
			errs = append(errs, err)
		}
	}
	// the provisioner's parent folder goes too, but only when empty (another cluster may use it)
	_ = syscall.Rmdir(hostPathRoot)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.Say("unmounted, removed cgroup %s, bridge %s and %d volume folder(s)", c.CgroupRoot, c.Bridge, len(volumes))
	return removeState(l)
}

// removeState deletes the state directory, but never while something is still mounted below it
// (RemoveAll would descend into the mount).
func removeState(l Layout) error {
	mounts, err := readMounts()
	if err != nil {
		return err
	}
	if left := MountsUnder(mounts, l.Root); len(left) > 0 {
		return fmt.Errorf("still mounted below %s: %s; unmount them and run kubox dev down again", l.Root, strings.Join(left, ", "))
	}
	return os.RemoveAll(l.Root)
}
