package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// env is what `up` gathered: the layout, the binaries, the images and the client.
type env struct {
	c     Config
	l     Layout
	t     Tools
	imgs  Images
	cs    kubernetes.Interface
	p     *Progress
	procs map[string]Proc
}

// Up brings the local environment up and returns once every component is ready. It is
// idempotent: when the environment is already healthy it says so and returns.
func Up(ctx context.Context, c Config, out io.Writer) error {
	p := NewProgress(out)
	l := NewLayout(c.StateDir)
	if ok, _ := Healthy(ctx, c, l); ok && c.InCluster == fileExists(l.InClusterMarker()) {
		p.Say("kubox dev is already up and healthy; nothing to do")
		printSummary(out, c, l)
		return nil
	}
	if _, err := os.Stat(l.Root); err == nil {
		p.Say("%s holds an environment that is not healthy: removing it first", l.Root)
		if err := Down(ctx, c, out); err != nil {
			return fmt.Errorf("clean up the previous environment: %w", err)
		}
	}
	e := &env{c: c, l: l, p: p, procs: map[string]Proc{}}
	if err := e.prepare(); err != nil {
		return err
	}
	if err := e.start(ctx); err != nil {
		return fmt.Errorf("%w\n(the processes started so far keep running: inspect %s, then run `kubox dev down`)", err, l.Logs)
	}
	if err := os.WriteFile(l.UpMarker(), nil, 0o644); err != nil {
		return err
	}
	p.Say("kubox dev is up in %s", p.Elapsed())
	printSummary(out, c, l)
	return nil
}

// prepare checks the host, installs packages, builds tools and images, and writes configs.
func (e *env) prepare() error {
	if err := Preflight(e.c, e.l); err != nil {
		return err
	}
	if err := EnsurePackages(e.p); err != nil {
		return err
	}
	if err := e.tools(); err != nil {
		return err
	}
	if err := e.images(); err != nil {
		return err
	}
	return e.writeState()
}

func (e *env) tools() error {
	e.p.Say("checking the pinned binaries in the tool cache (a first build takes 10-40 minutes on 2 cores, depending on load)")
	t, built, err := EnsureTools(e.c.RepoDir, e.p.Writer())
	if err != nil {
		return err
	}
	e.t = t
	if e.c.StockShim {
		if e.t.ShimRunsc, err = StockShimPath(e.c.RepoDir, e.p.Writer()); err != nil {
			return err
		}
		e.p.Say("handler runsc: gVisor's stock shim %s (--stock-shim; kubox-node install brings kubox's)", e.t.ShimRunsc)
	}
	if built {
		e.p.Say("binaries built")
	} else {
		e.p.Say("binaries cached: %s", filepath.Dir(filepath.Dir(t.Kubelet)))
	}
	return nil
}

func (e *env) images() error {
	imgs, cached, err := BuildImagesProgress(e.p, e.c.RepoDir, e.c.ImagesDir, "/bin/busybox")
	if err != nil {
		return err
	}
	e.imgs = imgs
	e.p.Say("images %s (%s): %s, %s, %s", map[bool]string{true: "cached", false: "built"}[cached], e.c.ImagesDir,
		BusyboxImage, SandboxImage, PythonImage)
	return nil
}

// writeState creates the state directory, the PKI, every config file, the cgroups and the bridge.
func (e *env) writeState() error {
	for _, d := range []string{e.l.Etc, e.l.Logs, e.l.Pids, e.l.Bin, e.l.KubeletRoot, e.l.PodLogs, e.l.CNIConfDir, e.l.RunscLogs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// checkpoint images hold sandboxes' memory: root only
	for _, d := range []string{e.l.Snapshots, e.l.SnapshotStore} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if e.c.InCluster {
		if err := os.WriteFile(e.l.InClusterMarker(), nil, 0o644); err != nil {
			return err
		}
	}
	pki, err := NewPKI(e.c, time.Now())
	if err != nil {
		return fmt.Errorf("create the PKI: %w", err)
	}
	if err := pki.Write(e.l.PKI); err != nil {
		return err
	}
	if err := e.writeConfigs(pki); err != nil {
		return err
	}
	if err := EnsureCgroups(e.c.CgroupRoot); err != nil {
		return err
	}
	if err := EnsureBridge(e.c); err != nil {
		return fmt.Errorf("create bridge %s: %w", e.c.Bridge, err)
	}
	e.p.Say("state in %s (PKI, configs, cgroup %s, bridge %s %s)", e.l.Root, e.c.CgroupRoot, e.c.Bridge, e.c.NodeIP())
	return nil
}

func (e *env) writeConfigs(pki PKI) error {
	if err := EnsureKey(e.l.AgentTokenKey); err != nil {
		return fmt.Errorf("create the agent token key: %w", err)
	}
	if err := EnsureKey(e.l.NodeToken); err != nil {
		return fmt.Errorf("create the node token: %w", err)
	}
	token, err := ensureToken(e.l.AdminToken)
	if err != nil {
		return fmt.Errorf("create the admin token: %w", err)
	}
	files := map[string]string{
		e.l.Kubeconfig:    RenderKubeconfig(e.c, pki["ca.crt"], pki["admin.crt"], pki["admin.key"], token),
		e.l.TokenAuthFile: RenderTokenAuthFile(token),
		filepath.Join(e.l.Etc, "containerd.toml"):          RenderContainerd(e.l, e.t),
		filepath.Join(e.l.Etc, "runsc.toml"):               RenderRunsc(e.l, e.t),
		filepath.Join(e.l.Etc, "kubelet.yaml"):             RenderKubelet(e.c, e.l, Host{CgroupV1: HostCgroupV1()}),
		filepath.Join(e.l.CNIConfDir, "10-kubox.conflist"): RenderCNI(e.c, e.l),
		e.l.ControllerConfig:                               RenderControllerConfig(e.c, e.l),
		e.l.EgressHosts:                                    egressHostsHeader,
	}
	for path, data := range files {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"kubectl": e.t.Kubectl, "ctr": e.t.Ctr, "runsc": e.t.Runsc} {
		if err := os.Symlink(target, filepath.Join(e.l.Bin, name)); err != nil {
			return err
		}
	}
	return nil
}

// start runs every component in order and waits for each to be ready.
func (e *env) start(ctx context.Context) error {
	plan := Plan(e.c, e.l, e.t)
	if err := e.controlPlane(ctx, plan); err != nil {
		return err
	}
	if err := e.node(ctx, plan); err != nil {
		return err
	}
	return e.platform(ctx)
}

func (e *env) controlPlane(ctx context.Context, plan map[string]Component) error {
	if err := e.run(ctx, plan[Etcd], 30*time.Second, HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/health", e.c.Ports.EtcdClient))); err != nil {
		return err
	}
	cs, err := NewClient(e.l.Kubeconfig)
	if err != nil {
		return err
	}
	e.cs = cs
	if err := e.run(ctx, plan[APIServer], 90*time.Second, APIServerReady(cs)); err != nil {
		return err
	}
	if err := e.run(ctx, plan[ControllerManager], 60*time.Second, HTTPOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", e.c.Ports.ControllerManager))); err != nil {
		return err
	}
	return e.run(ctx, plan[Scheduler], 60*time.Second, HTTPOK(fmt.Sprintf("https://127.0.0.1:%d/healthz", e.c.Ports.Scheduler)))
}

func (e *env) node(ctx context.Context, plan map[string]Component) error {
	if err := e.run(ctx, plan[Containerd], 30*time.Second, e.ctrReady); err != nil {
		return err
	}
	if err := e.networkPolicies(ctx, plan[NetworkPolicies]); err != nil {
		return err
	}
	start := time.Now()
	for _, img := range []string{e.imgs.Pause, e.imgs.Busybox, e.imgs.Python, e.imgs.Agent} {
		if _, err := e.ctr("images", "import", img); err != nil {
			return fmt.Errorf("import %s into containerd: %w", img, err)
		}
	}
	e.p.Say("images imported into containerd (namespace k8s.io) in %s", time.Since(start).Round(100*time.Millisecond))
	if err := e.run(ctx, plan[Kubelet], 60*time.Second, HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", e.c.Ports.KubeletHealthz))); err != nil {
		return err
	}
	if err := e.wait(ctx, Kubelet, "node "+e.c.NodeName, 90*time.Second, NodeReady(e.cs, e.c.NodeName)); err != nil {
		return err
	}
	return nil
}

// networkPolicies makes bridged Pod traffic visible to netfilter and starts kube-network-policies.
func (e *env) networkPolicies(ctx context.Context, comp Component) error {
	changed, err := EnsureBridgeNetfilter()
	if err != nil {
		return err
	}
	if changed {
		e.p.Say("turned on net.bridge.bridge-nf-call-iptables (br_netfilter), so NetworkPolicy applies between Pods on %s", e.c.Bridge)
	}
	return e.run(ctx, comp, 60*time.Second, networkPoliciesReady)
}

// platform registers the cluster-wide objects, the CRDs and the kubox controller.
func (e *env) platform(ctx context.Context) error {
	if err := ClusterObjects(ctx, e.cs); err != nil {
		return err
	}
	e.p.Say("RuntimeClasses runc and gvisor (handler runsc), default StorageClass %s", StorageClassName)
	n, err := ApplyCRDs(e.t.Kubectl, e.l.Kubeconfig, filepath.Join(e.c.RepoDir, "config", "crd", "bases"))
	if err != nil {
		return fmt.Errorf("install the CRDs: %w", err)
	}
	e.p.Say("CRDs applied from config/crd/bases: %d file(s)", n)
	if err := ApplyAdmissionPolicies(e.t.Kubectl, e.l.Kubeconfig, filepath.Join(e.c.RepoDir, "config", "admission")); err != nil {
		return fmt.Errorf("install the admission policies: %w", err)
	}
	e.p.Say("admission policies applied from config/admission")
	if err := e.wait(ctx, ControllerManager, "service account default/default", 60*time.Second, DefaultServiceAccount(e.cs)); err != nil {
		return err
	}
	if err := e.nodeServices(ctx); err != nil {
		return err
	}
	return kuboxModeOf(e.c, e.l).start(ctx, e)
}

// egressHostsHeader starts Layout.EgressHosts, which kubox-egress reads again on each change.
const egressHostsHeader = `# kubox-egress resolves the names below (hosts(5) lines: ADDRESS NAME...) before asking DNS,
# for sandboxes whose template has spec.egress. Point a name at a server of your own here.
`

// nodeServices builds kubox-egress from the checkout and runs it on the node, in both kubox
// modes: the proxy of sandboxes with spec.egress is node infrastructure here, as
// kube-network-policies.
func (e *env) nodeServices(ctx context.Context) error {
	bins, err := BuildBinaries(e.c.RepoDir, Egress)
	if err != nil {
		return err
	}
	return e.run(ctx, EgressComponent(bins[Egress], e.c, e.l), 60*time.Second, egressReady(e.c))
}

// nodeAPI builds kubox-node from the checkout and runs it as a host process (the process mode;
// the in-cluster mode runs config/node's DaemonSet).
func (e *env) nodeAPI(ctx context.Context) error {
	bins, err := BuildBinaries(e.c.RepoDir, NodeAPI)
	if err != nil {
		return err
	}
	return e.run(ctx, NodeAPIComponent(bins[NodeAPI], e.c, e.l, e.t), 30*time.Second, nodeAPIReady(e.c))
}

// kubox builds kubox-controller and kubox-router from the checkout and runs them.
func (e *env) kubox(ctx context.Context) error {
	e.p.Say("building bin/kubox-controller and bin/kubox-router from the checkout")
	bins, err := BuildBinaries(e.c.RepoDir, Controller, Router)
	if err != nil {
		return err
	}
	if err := e.run(ctx, ControllerComponent(bins[Controller], e.c, e.l), 60*time.Second, controllerReady(e.c)); err != nil {
		return err
	}
	return e.run(ctx, RouterComponent(bins[Router], e.c, e.l), 60*time.Second, routerReady(e.c))
}

// run starts comp and waits until ready reports true, failing early when the process exits.
func (e *env) run(ctx context.Context, comp Component, timeout time.Duration, ready func(context.Context) (bool, error)) error {
	proc, err := Start(e.l, comp, nil)
	if err != nil {
		return err
	}
	e.procs[comp.Name] = proc
	return e.wait(ctx, comp.Name, comp.Name, timeout, ready)
}

func (e *env) wait(ctx context.Context, name, what string, timeout time.Duration, ready func(context.Context) (bool, error)) error {
	proc := e.procs[name]
	err := Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		if !proc.Alive() {
			return false, errExited
		}
		return ready(ctx)
	})
	if errors.Is(err, errExited) || !proc.Alive() {
		return fmt.Errorf("%s exited while starting; last lines of %s:\n%s", name, e.l.LogFile(name), LogTail(e.l, name, 20))
	}
	if err != nil {
		return fmt.Errorf("%s: %w; last lines of %s:\n%s", what, err, e.l.LogFile(name), LogTail(e.l, name, 20))
	}
	e.p.Say("%s ready (pid %d)", what, proc.PID)
	return nil
}

var errExited = errors.New("process exited")

func (e *env) ctrReady(context.Context) (bool, error) {
	if _, err := os.Stat(e.l.ContainerdSocket); err != nil {
		return false, err
	}
	_, err := e.ctr("version")
	return err == nil, err
}

func (e *env) ctr(args ...string) (string, error) {
	return ctrRun(e.t.Ctr, e.l, args...)
}

// ctrRun runs ctr against the environment's containerd in namespace k8s.io and returns its
// stdout; on failure the error carries stderr (which also holds ctr's warnings, so it is never
// parsed).
func ctrRun(ctr string, l Layout, args ...string) (string, error) {
	return ctrRunContext(context.Background(), ctr, l, args...)
}

// ctrRunContext is ctrRun that gives up (kills ctr) when ctx ends.
func ctrRunContext(ctx context.Context, ctr string, l Layout, args ...string) (string, error) {
	full := append([]string{"-a", l.ContainerdSocket, "-n", "k8s.io"}, args...)
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, ctr, full...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return strings.TrimSpace(string(out)), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func printSummary(out io.Writer, c Config, l Layout) {
	_, _ = fmt.Fprintf(out, `
kubox dev environment
  use it      export KUBECONFIG=%[1]s
              %[2]s/kubectl get nodes        (kubectl v1.37.2; ctr and runsc are there too)
  API server  https://127.0.0.1:%[3]d (admin client certificate and token in the kubeconfig)
  router      %[15]s (kubox-router; the kubeconfig names it for the kubox CLI)
  node        %[4]s, IP %[5]s; pods on bridge %[6]s %[7]s, reachable from this host by pod IP
  runtimes    RuntimeClass runc (default) and gvisor (handler runsc)
  policy      NetworkPolicy enforced by kube-network-policies (its verdicts: %[12]s/kube-network-policies.log)
  egress      kubox-egress on %[16]s for templates with spec.egress (names: %[17]s)
  snapshots   kubox-node on %[18]s (token %[19]s); gVisor snapshots in %[20]s/<namespace>, copies in %[21]s
  storage     StorageClass %[8]s (default; hostPath volumes under /tmp/hostpath_pv)
  images      %[9]s, %[10]s, %[14]s (use imagePullPolicy: Never or IfNotPresent)
  state       %[11]s   logs %[12]s/<component>.log   pidfiles %[13]s
  status      kubox dev status        stop and remove: kubox dev down
`, l.Kubeconfig, l.Bin, c.Ports.APIServer, c.NodeName, c.NodeIP(), c.Bridge, c.PodSubnet,
		StorageClassName, BusyboxImage, SandboxImage, l.Root, l.Logs, l.Pids, PythonImage, c.RouterURL(),
		c.EgressProxyURL(), l.EgressHosts, c.NodeAPIURL(), l.NodeToken, l.Snapshots, l.SnapshotStore)
}
