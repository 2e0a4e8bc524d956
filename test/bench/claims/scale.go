package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/controller/sandboxwarmpool"
	"github.com/kubox-dev/kubox/test/bench/harness"
)

// scaleScenario is the -only value that runs the scale benchmark instead of the claim scenarios:
// it takes minutes and a cluster of its own, so the default run leaves it out.
const scaleScenario = "scale"

const scaleNS = "scale"

var (
	scaleSandboxes = flag.Int("scale-sandboxes", 10000, "scale: standalone Sandboxes at the last step (the first step has 1000)")
	scalePools     = flag.Int("scale-pools", 20, "scale: warm pools")
	scalePoolSize  = flag.Int("scale-pool-size", 100, "scale: members of each warm pool")
	scaleRest      = flag.Duration("scale-rest", 60*time.Second, "scale: how long each step measures the controller at rest")
	scaleWorkers   = flag.Int("scale-create-workers", 16, "scale: concurrent Create calls while filling the cluster")
	scaleTimeout   = flag.Duration("scale-ready-timeout", 15*time.Minute, "scale: how long a step may take to make every Sandbox Ready")
	scalePodsNode  = flag.Int("scale-pods-per-node", 500, "scale: pods per kwok node (the node count follows)")
	scaleBaseline  = flag.String("scale-baseline-bin", "", "scale: another kubox-controller binary (say, built from main) to restart and measure at each step, for a before/after on the same cluster")
	scaleMemLimits = flag.String("scale-gomemlimit", "off", "scale: GOMEMLIMIT values (comma-separated; off = no limit) the controller runs with: it fills the cluster with the first and each step restarts it with each; the baseline runs with off")
)

// scaleBench fills a kwok cluster with Sandboxes in steps and measures, at each step, the
// kubox-controller process (the released binary, run as an operator runs it) at rest and
// through a restart.
type scaleBench struct {
	c    client.Client
	ctrl *controllerProcess
	dir  string
	made int // standalone Sandboxes created so far
}

// scaleStep is what one step measured.
type scaleStep struct {
	standalone, total int
	fill              time.Duration
	rest              restFigures
	restarts          []syncFigures // this checkout's binary, then -scale-baseline-bin's
	heapTop           string
	profile           string
}

func runScale(ctx context.Context, repo string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM) // stop the cluster on ^C
	defer stop()
	if err := os.Chdir(repo); err != nil { // harness.BuildStatic builds ./cmd/kubox-controller
		return err
	}
	total := *scaleSandboxes + *scalePools**scalePoolSize
	opts, err := harness.ToolOptions(repo, total / *scalePodsNode + 2, *scalePodsNode)
	if err != nil {
		return err
	}
	cl, err := harness.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the cluster: %v\n", err)
		}
	}()
	dir, err := os.MkdirTemp("", "kubox-bench-scale-")
	if err != nil {
		return err
	}
	ctrl, err := newControllerProcess(dir, cl.KubeConfig)
	if err != nil {
		return err
	}
	ctrl.gomemlimit = memLimits()[0]
	if err := ctrl.start(); err != nil {
		return err
	}
	b := &scaleBench{c: cl.Client, ctrl: ctrl, dir: dir}
	defer func() { b.ctrl.stop() }()
	fmt.Printf("# kubox scale benchmark: kubox-controller with %d warm pools of %d, then %v standalone Sandboxes; %d CPUs, %s\n\n",
		*scalePools, *scalePoolSize, scaleSteps(), runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("heap profiles and the controller's log: %s\n\n", dir)
	if err := b.setup(ctx); err != nil {
		return err
	}
	var steps []scaleStep
	for _, n := range scaleSteps() {
		s, err := b.step(ctx, n)
		if err != nil {
			return fmt.Errorf("step of %d Sandboxes: %w", n, err)
		}
		s.print()
		steps = append(steps, s)
	}
	printScaleSummary(steps)
	return nil
}

// scaleSteps are the standalone Sandbox counts measured: 1,000 and -scale-sandboxes.
func scaleSteps() []int {
	if *scaleSandboxes <= 1000 {
		return []int{*scaleSandboxes}
	}
	return []int{1000, *scaleSandboxes}
}

// setup creates the namespace, one template and the warm pools.
func (b *scaleBench) setup(ctx context.Context) error {
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNS}}); err != nil {
		return err
	}
	tpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "scale", Namespace: scaleNS}}
	tpl.Spec.PodTemplate.Spec.Containers = scaleContainers()
	if err := b.c.Create(ctx, tpl); err != nil {
		return err
	}
	for i := range *scalePools {
		pool := &extv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pool-%02d", i), Namespace: scaleNS}}
		pool.Spec.Replicas = ptr.To(int32(*scalePoolSize))
		pool.Spec.SandboxTemplateRef.Name = "scale"
		if err := b.c.Create(ctx, pool); err != nil {
			return err
		}
	}
	return nil
}

func scaleContainers() []corev1.Container {
	return []corev1.Container{{Name: "main", Image: "kubox.local/busybox:dev", Command: []string{"sleep", "infinity"}}}
}

// step grows the cluster to n standalone Sandboxes, waits until every Sandbox (standalone and
// warm) is Ready, measures the controller at rest, saves its heap profile and restarts it.
func (b *scaleBench) step(ctx context.Context, n int) (scaleStep, error) {
	s := scaleStep{standalone: n, total: n + *scalePools**scalePoolSize}
	start := time.Now()
	if err := b.createSandboxes(ctx, n); err != nil {
		return s, err
	}
	if err := b.waitReady(ctx, s.total); err != nil {
		return s, err
	}
	s.fill = time.Since(start)
	var err error
	if s.rest, err = b.ctrl.measureRest(ctx, *scaleRest); err != nil {
		return s, err
	}
	s.profile = filepath.Join(b.dir, fmt.Sprintf("heap-%d.pb.gz", n))
	if s.heapTop, err = b.ctrl.heapProfile(s.profile); err != nil {
		return s, err
	}
	return s, b.restarts(ctx, &s)
}

// memLimits are the -scale-gomemlimit values.
func memLimits() []string { return strings.Split(*scaleMemLimits, ",") }

// restarts measures a restart of this checkout's controller with each -scale-gomemlimit value
// and, with -scale-baseline-bin, one of the baseline's without a limit, after which this
// checkout's controller runs again as it filled the cluster.
func (b *scaleBench) restarts(ctx context.Context, s *scaleStep) error {
	own, limits := b.ctrl.bin, memLimits()
	for _, limit := range limits {
		f, err := b.ctrl.restart(ctx, own, limit, s.total, *scalePools)
		if err != nil {
			return err
		}
		s.restarts = append(s.restarts, f)
	}
	if *scaleBaseline == "" {
		if len(limits) == 1 {
			return nil
		}
		_, err := b.ctrl.restart(ctx, own, limits[0], s.total, *scalePools)
		return err
	}
	f, err := b.ctrl.restart(ctx, *scaleBaseline, "off", s.total, *scalePools)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	s.restarts = append(s.restarts, f)
	_, err = b.ctrl.restart(ctx, own, limits[0], s.total, *scalePools)
	return err
}

// createSandboxes creates standalone Sandboxes until there are n, with -scale-create-workers
// Create calls in flight.
func (b *scaleBench) createSandboxes(ctx context.Context, n int) error {
	next := make(chan int)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range *scaleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sb-%05d", i), Namespace: scaleNS}}
				sb.Spec.PodTemplate.Spec.Containers = scaleContainers()
				if err := b.c.Create(ctx, sb); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	for ; b.made < n && failed.Load() == nil; b.made++ {
		next <- b.made
	}
	close(next)
	wg.Wait()
	if err := failed.Load(); err != nil {
		return fmt.Errorf("creating Sandboxes: %w", *err)
	}
	return nil
}

// waitReady waits until the controller counts total Ready Sandboxes in its agent_sandboxes
// gauge (counted from its own cache, so the API server is not asked to list them).
func (b *scaleBench) waitReady(ctx context.Context, total int) error {
	deadline := time.Now().Add(*scaleTimeout)
	last := time.Now()
	for {
		m, err := b.ctrl.metrics()
		if err != nil {
			return err
		}
		ready := int(m.sum("agent_sandboxes", label("ready_condition", "true")))
		if ready >= total {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Sandboxes Ready after %v", ready, total, *scaleTimeout)
		}
		if time.Since(last) > 30*time.Second {
			fmt.Fprintf(os.Stderr, "scale: %d of %d Sandboxes Ready\n", ready, total)
			last = time.Now()
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *scaleStep) print() {
	fmt.Printf("## %d standalone Sandboxes + %d warm members (%d Sandboxes, %d Pods)\n\n", s.standalone, s.total-s.standalone, s.total, s.total)
	fmt.Printf("filled and all Ready in %.0fs\n\n", s.fill.Seconds())
	fmt.Printf("at rest for %.0fs after filling (GOMEMLIMIT=%s):\n\n", s.rest.window.Seconds(), memLimits()[0])
	s.rest.print()
	fmt.Printf("restarts: caches synced = first reconcile; full sync = every Sandbox and pool reconciled once and every " +
		"work queue empty; memory 20 s later\n\n| binary | GOMEMLIMIT | caches synced, s | full sync, s | reconciles | API requests " +
		"| RSS MiB (anon + file) | heap in use MiB | live heap MiB |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.restarts {
		fmt.Printf("| %s | %s | %.1f | %.1f | %d | %d | %.0f (%.0f + %.0f) | %.0f | %.0f |\n", r.bin, r.gomemlimit, r.synced.Seconds(), r.full.Seconds(),
			r.reconciles, r.requests, r.mem.rss, r.mem.anon, r.mem.file, r.heapMiB, r.liveMiB)
	}
	fmt.Println()
	fmt.Printf("heap profile %s (go tool pprof -top -sample_index=inuse_space):\n\n```\n%s```\n\n", s.profile, s.heapTop)
}

func printScaleSummary(steps []scaleStep) {
	fmt.Printf("## summary\n\n| Sandboxes | RSS MiB | heap in use MiB | reconciles/s at rest | API requests/s at rest " +
		"| after a restart (binary, GOMEMLIMIT): full sync s, RSS MiB, live heap MiB |\n|---|---|---|---|---|---|\n")
	for _, s := range steps {
		cells := make([]string, len(s.restarts))
		for i, r := range s.restarts {
			cells[i] = fmt.Sprintf("%s, %s: %.1f, %.0f, %.0f", filepath.Base(r.bin), r.gomemlimit, r.full.Seconds(), r.mem.rss, r.liveMiB)
		}
		fmt.Printf("| %d | %.0f | %.0f | %.2f | %.2f | %s |\n", s.total, s.rest.mem.rss, s.rest.heapMiB,
			s.rest.reconcilesPerSec, s.rest.requestsPerSec, strings.Join(cells, "; "))
	}
	fmt.Println()
}

// syncDone says whether the restarted controller has done its first full pass: every Sandbox and
// pool reconciled at least once and no work queued.
func syncDone(m promText, sandboxes, pools int) bool {
	return m.sum("controller_runtime_reconcile_total", label("controller", sandbox.Name)) >= float64(sandboxes) &&
		m.sum("controller_runtime_reconcile_total", label("controller", sandboxwarmpool.Name)) >= float64(pools) &&
		m.sum("workqueue_depth", nil) == 0
}

var errNoSync = errors.New("the restarted controller did not finish its first pass")
