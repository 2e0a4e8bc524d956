// Command claims measures SandboxClaims against a warm pool: claim-to-Ready latency percentiles,
// throughput, the API writes a claim causes (by verb and resource) and the controller's memory.
// It runs the repo's own kube-apiserver and etcd, kube-scheduler, a garbage collector and kwok
// nodes (test/bench/harness), with kubox's controllers in this process, their client wrapped to
// count writes. `make bench` runs it; docs/benchmarks.md explains the method and the figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/apiconn"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/manager"
	"github.com/kubox-dev/kubox/test/bench/harness"
)

const ns = "bench"

type options struct {
	pool, nodes    int
	slowRate       float64
	slowFor        time.Duration
	fastRate       float64
	fastFor        time.Duration
	maxWorkers     int
	maxFor         time.Duration
	burst          int
	readyTimeout   time.Duration
	scenarioFilter string
	// replenishDelay and maxRefillRate are the warm pool's refill settings.
	replenishDelay time.Duration
	maxRefillRate  float64
	// apiConnections and separateWatch are the controllers' clientConnection settings.
	apiConnections int
	separateWatch  bool
	// noOptionalWrites turns off what costs writes without being the claim's state: Normal
	// Events about Sandboxes and claims, and the claims' observability annotations.
	noOptionalWrites bool
	// statusBatch is controllers.sandboxWarmPool.statusBatchPeriod.
	statusBatch time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.pool, "pool", 300, "warm pool replicas")
	flag.IntVar(&o.nodes, "nodes", 20, "kwok nodes (110 pods each)")
	flag.Float64Var(&o.slowRate, "slow-rate", 1, "claims per second of the steady scenario")
	flag.DurationVar(&o.slowFor, "slow-for", 30*time.Second, "duration of the steady scenario")
	flag.Float64Var(&o.fastRate, "fast-rate", 50, "claims per second of the fast scenario")
	flag.DurationVar(&o.fastFor, "fast-for", 30*time.Second, "duration of the fast scenario")
	flag.IntVar(&o.maxWorkers, "max-workers", 64, "concurrent clients of the max-throughput scenario (each waits for Ready before its next claim)")
	flag.DurationVar(&o.maxFor, "max-for", 20*time.Second, "duration of the max-throughput scenario")
	flag.IntVar(&o.burst, "burst", 300, "claims created at once in the burst scenario")
	flag.DurationVar(&o.readyTimeout, "ready-timeout", 5*time.Minute, "how long to wait for a scenario's claims to be Ready")
	flag.StringVar(&o.scenarioFilter, "only", "", "run only the scenario with this name (steady, fast, max, burst, storm, storm-ha, settings; or scale, which only -only runs: scale.go)")
	flag.DurationVar(&o.replenishDelay, "replenish-delay", configv1alpha1.DefaultWarmPoolReplenishDelay, "controllers.sandboxWarmPool.replenishDelay")
	flag.Float64Var(&o.maxRefillRate, "max-refill-rate", float64(configv1alpha1.DefaultWarmPoolMaxRefillRate), "controllers.sandboxWarmPool.maxRefillRate")
	flag.IntVar(&o.apiConnections, "api-connections", int(configv1alpha1.DefaultAPIConnections), "clientConnection.apiConnections: HTTP/2 connections the controllers' requests are spread over")
	flag.BoolVar(&o.separateWatch, "separate-watch-connection", false, "clientConnection.separateWatchConnection")
	flag.BoolVar(&o.noOptionalWrites, "no-optional-writes", false,
		"controllers.sandbox.events, controllers.sandboxClaim.events and .observabilityAnnotations false: no Normal Events, no claim annotations")
	flag.DurationVar(&o.statusBatch, "status-batch-period", configv1alpha1.DefaultWarmPoolStatusBatchPeriod, "controllers.sandboxWarmPool.statusBatchPeriod")
	flag.Parse()
	ctrl.SetLogger(ctrlLogger())
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "claims benchmark: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	if o.scenarioFilter == scaleScenario {
		return runScale(ctx, repo)
	}
	cl, err := startCluster(ctx, repo, o.nodes)
	if err != nil {
		return err
	}
	defer func() {
		cancel() // stops the benchmark's informer first: its open watches hold the API server's shutdown
		if err := cl.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the cluster: %v\n", err)
		}
	}()

	writes := harness.NewWriteCounter()
	b := &bench{o: o, c: cl.Client, writes: writes, stored: map[string]time.Time{}}
	if b.stopKubox, _, err = startKubox(ctx, cl, writes, o); err != nil {
		return err
	}
	defer func() { b.stopKubox() }() // the storm scenarios replace the controllers
	if b.w, err = newWatcher(ctx, cl); err != nil {
		return err
	}
	b.cl = cl
	if err := b.setup(ctx); err != nil {
		return err
	}
	fmt.Printf("# kubox claim benchmark: pool of %d, %d kwok nodes, %d CPUs, %s\n\n", o.pool, o.nodes, runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	for _, s := range b.scenarios() {
		if o.scenarioFilter != "" && s.name != o.scenarioFilter {
			continue
		}
		res, err := b.runScenario(ctx, s)
		if res != nil {
			res.print() // measured, even when the cleanup after it failed
		}
		if err != nil {
			return fmt.Errorf("scenario %s: %w", s.name, err)
		}
	}
	return nil
}

func startCluster(ctx context.Context, repo string, nodes int) (*harness.Cluster, error) {
	sched, err := harness.Tool(repo, "kubernetes", "kube-scheduler")
	if err != nil {
		return nil, err
	}
	kcm, err := harness.Tool(repo, "kubernetes", "kube-controller-manager")
	if err != nil {
		return nil, err
	}
	kwok, err := harness.Tool(repo, "kwok", "kwok")
	if err != nil {
		return nil, err
	}
	stages, err := harness.Tool(repo, "kwok", "kwok-stages.yaml")
	if err != nil {
		return nil, err
	}
	return harness.Start(ctx, harness.Options{Nodes: nodes, MaxPodsPerNode: 110, SchedulerBin: sched,
		ControllerManagerBin: kcm, KwokBin: kwok, KwokStages: stages})
}

// startKubox runs every kubox controller in this process, as kubox-controller does, with the
// client's writes counted, the options o gives, and configure's changes to the configuration
// and the manager's options.
func startKubox(ctx context.Context, cl *harness.Cluster, writes *harness.WriteCounter, o options,
	configure ...func(*configv1alpha1.ControllerConfiguration, *ctrl.Options)) (func(), ctrl.Manager, error) {
	cfg := &configv1alpha1.ControllerConfiguration{}
	cfg.Controllers.SandboxWarmPool.ReplenishDelay = &metav1.Duration{Duration: o.replenishDelay}
	cfg.Controllers.SandboxWarmPool.MaxRefillRate = ptr.To(float32(o.maxRefillRate))
	cfg.ClientConnection.APIConnections = ptr.To(int32(o.apiConnections))
	cfg.ClientConnection.SeparateWatchConnection = ptr.To(o.separateWatch)
	cfg.Controllers.SandboxWarmPool.StatusBatchPeriod = &metav1.Duration{Duration: o.statusBatch}
	if o.noOptionalWrites {
		cfg.Controllers.Sandbox.Events = ptr.To(false)
		cfg.Controllers.SandboxClaim.Events = ptr.To(false)
		cfg.Controllers.SandboxClaim.ObservabilityAnnotations = ptr.To(false)
	}
	configv1alpha1.SetDefaults(cfg)
	rc := rest.CopyConfig(cl.Config)
	rc.QPS, rc.Burst = -1, int(*cfg.ClientConnection.Burst)
	rc.WrapTransport = writes.Wrap
	rc, err := apiconn.Shard(rc, o.apiConnections, o.separateWatch)
	if err != nil {
		return nil, nil, err
	}
	opts := manager.Options(cfg, manager.NewScheme())
	opts.LeaderElection = false
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	for _, c := range configure {
		c(cfg, &opts)
	}
	mgr, err := ctrl.NewManager(rc, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, nil, err
	}
	if err := manager.SetupReconcilers(mgr, cfg, controller.Options{}); err != nil {
		return nil, nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, nil, fmt.Errorf("the controller's caches did not sync: %v", <-done)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "kubox controllers stopped: %v\n", err)
		}
	}, mgr, nil
}

// watcher records when each claim was first seen Ready, from an informer of the benchmark's own
// (uncounted) client.
type watcher struct {
	cache cache.Cache
	mu    sync.Mutex
	ready map[string]time.Time
	wake  chan struct{}
}

func newWatcher(ctx context.Context, cl *harness.Cluster) (*watcher, error) {
	c, err := cache.New(cl.Config, cache.Options{Scheme: cl.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	w := &watcher{cache: c, ready: map[string]time.Time{}, wake: make(chan struct{}, 1)}
	inf, err := c.GetInformer(ctx, &extv1beta1.SandboxClaim{})
	if err != nil {
		return nil, err
	}
	observe := func(obj any) {
		claim, ok := obj.(*extv1beta1.SandboxClaim)
		if !ok || !meta.IsStatusConditionTrue(claim.Status.Conditions, extv1beta1.ClaimConditionReady) {
			return
		}
		now := time.Now()
		w.mu.Lock()
		if _, seen := w.ready[claim.Name]; !seen {
			w.ready[claim.Name] = now
		}
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, n any) { observe(n) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the benchmark's claim informer did not sync")
	}
	return w, nil
}

// waitReady waits until every claim in names is Ready and returns when each became so.
func (w *watcher) waitReady(ctx context.Context, names []string, timeout time.Duration) (map[string]time.Time, error) {
	deadline := time.After(timeout)
	for {
		out := map[string]time.Time{}
		w.mu.Lock()
		for _, n := range names {
			if t, ok := w.ready[n]; ok {
				out[n] = t
			}
		}
		w.mu.Unlock()
		if len(out) == len(names) {
			return out, nil
		}
		select {
		case <-w.wake:
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			return nil, fmt.Errorf("%d of %d claims Ready after %v", len(out), len(names), timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

type bench struct {
	o      options
	c      client.Client
	writes *harness.WriteCounter
	w      *watcher
	seq    int

	// cl and stopKubox let the storm scenarios kill the controllers and start new ones.
	cl        *harness.Cluster
	stopKubox func()
	// check, when a scenario's load sets it, runs once its claims are Ready; its report is
	// printed with the result.
	check func(ctx context.Context, names []string) (string, error)

	// stored is when each claim's Create call returned: the claim exists from then on.
	storedMu sync.Mutex
	stored   map[string]time.Time
}

func (b *bench) setup(ctx context.Context) error {
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	tpl := &extv1beta1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns}}
	tpl.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: "main", Image: "kubox.local/busybox:dev", Command: []string{"sleep", "infinity"}}}
	if err := b.c.Create(ctx, tpl); err != nil {
		return err
	}
	pool := &extv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns}}
	pool.Spec.Replicas = ptr.To(int32(b.o.pool))
	pool.Spec.SandboxTemplateRef.Name = "bench"
	if err := b.c.Create(ctx, pool); err != nil {
		return err
	}
	start := time.Now()
	if err := b.waitPoolFull(ctx); err != nil {
		return err
	}
	fmt.Printf("pool of %d Ready in %.1fs\n", b.o.pool, time.Since(start).Seconds())
	return nil
}

func (b *bench) waitPoolFull(ctx context.Context) error {
	deadline := time.Now().Add(b.o.readyTimeout)
	for {
		pool := &extv1beta1.SandboxWarmPool{}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bench"}, pool); err != nil {
			return err
		}
		if pool.Status.ReadyReplicas >= int32(b.o.pool) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("warm pool has %d of %d ready members after %v", pool.Status.ReadyReplicas, b.o.pool, b.o.readyTimeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

type scenario struct {
	name, about string
	load        func(ctx context.Context, b *bench) ([]string, map[string]time.Time, error)
}

func (b *bench) scenarios() []scenario {
	return []scenario{
		{"steady", fmt.Sprintf("%.0f claim/s for %v", b.o.slowRate, b.o.slowFor), func(ctx context.Context, b *bench) ([]string, map[string]time.Time, error) {
			return b.openLoop(ctx, b.o.slowRate, b.o.slowFor)
		}},
		{"fast", fmt.Sprintf("%.0f claims/s for %v", b.o.fastRate, b.o.fastFor), func(ctx context.Context, b *bench) ([]string, map[string]time.Time, error) {
			return b.openLoop(ctx, b.o.fastRate, b.o.fastFor)
		}},
		{"max", fmt.Sprintf("%d clients claiming back to back for %v", b.o.maxWorkers, b.o.maxFor), func(ctx context.Context, b *bench) ([]string, map[string]time.Time, error) {
			return b.closedLoop(ctx, b.o.maxWorkers, b.o.maxFor)
		}},
		{"burst", fmt.Sprintf("%d claims at once", b.o.burst), func(ctx context.Context, b *bench) ([]string, map[string]time.Time, error) {
			return b.burst(ctx, b.o.burst)
		}},
		b.stormScenario(false),
		b.stormScenario(true),
		b.settingsScenario(),
	}
}

func (b *bench) create(ctx context.Context, name string) error {
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	claim.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: "bench"}
	if err := b.c.Create(ctx, claim); err != nil {
		return err
	}
	b.storedMu.Lock()
	b.stored[name] = time.Now()
	b.storedMu.Unlock()
	return nil
}

// openLoop creates claims at rate per second for d, whatever the controller's pace.
func (b *bench) openLoop(ctx context.Context, rate float64, d time.Duration) ([]string, map[string]time.Time, error) {
	var names []string
	created := map[string]time.Time{}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for now := time.Now(); now.Before(end); now = <-tick.C {
		b.seq++
		name := fmt.Sprintf("c-%06d", b.seq)
		wg.Add(1)
		go func() { // creating must not slow the schedule down
			defer wg.Done()
			t := time.Now()
			err := b.create(ctx, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			names = append(names, name)
			created[name] = t
		}()
	}
	wg.Wait()
	return names, created, firstErr
}

// closedLoop runs workers that each create a claim and wait for it to be Ready before the next.
func (b *bench) closedLoop(ctx context.Context, workers int, d time.Duration) ([]string, map[string]time.Time, error) {
	var mu sync.Mutex
	var names []string
	created := map[string]time.Time{}
	end := time.Now().Add(d)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				mu.Lock()
				b.seq++
				name := fmt.Sprintf("c-%06d", b.seq)
				mu.Unlock()
				t := time.Now()
				if err := b.create(ctx, name); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				names, created[name] = append(names, name), t
				mu.Unlock()
				if _, err := b.w.waitReady(ctx, []string{name}, b.o.readyTimeout); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return names, created, <-errs
}

func (b *bench) burst(ctx context.Context, n int) ([]string, map[string]time.Time, error) {
	names := make([]string, n)
	for i := range names {
		b.seq++
		names[i] = fmt.Sprintf("c-%06d", b.seq)
	}
	created := make(map[string]time.Time, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.Now()
			if err := b.create(ctx, name); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			created[name] = t
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	return names, created, <-errs
}

type result struct {
	scenario
	claims, warm  int
	elapsed       time.Duration
	latencies     []time.Duration
	fromStored    []time.Duration
	writes        map[string]int
	heapMB        float64
	peakRSSMB     float64
	throughputPer float64
	phasesBefore  phaseTotals
	phasesAfter   phaseTotals
	report        string
}

func (b *bench) runScenario(ctx context.Context, s scenario) (*result, error) {
	b.writes.Snapshot()
	phasesBefore, err := readPhases()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	names, created, err := s.load(ctx, b)
	if err != nil {
		return nil, err
	}
	readyAt, err := b.w.waitReady(ctx, names, b.o.readyTimeout)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	res := &result{scenario: s, claims: len(names), elapsed: elapsed, writes: b.writes.Snapshot(), phasesBefore: phasesBefore}
	if res.phasesAfter, err = readPhases(); err != nil {
		return nil, err
	}
	b.storedMu.Lock()
	for _, n := range names {
		res.latencies = append(res.latencies, readyAt[n].Sub(created[n]))
		res.fromStored = append(res.fromStored, readyAt[n].Sub(b.stored[n]))
	}
	b.storedMu.Unlock()
	for _, l := range [][]time.Duration{res.latencies, res.fromStored} {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	}
	res.throughputPer = float64(len(names)) / elapsed.Seconds()
	if res.warm, err = b.countWarm(ctx); err != nil {
		return nil, err
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	res.heapMB = float64(ms.HeapAlloc) / (1 << 20)
	res.peakRSSMB = selfPeakRSSMiB()
	if check := b.check; check != nil {
		b.check = nil
		if res.report, err = check(ctx, names); err != nil {
			return nil, err
		}
	}
	return res, b.reset(ctx)
}

func (b *bench) countWarm(ctx context.Context) (int, error) {
	list := &sandboxv1beta1.SandboxList{}
	if err := b.c.List(ctx, list, client.InNamespace(ns), client.HasLabels{sandboxv1beta1.ClaimUIDLabel}); err != nil {
		return 0, err
	}
	warm := 0
	for _, sb := range list.Items {
		if sb.Labels[sandboxv1beta1.LaunchTypeLabel] == extv1beta1.LaunchTypeWarm {
			warm++
		}
	}
	return warm, nil
}

// reset deletes the scenario's claims (the garbage collector deletes their sandboxes and pods)
// and waits for the pool to be full again.
func (b *bench) reset(ctx context.Context) error {
	// A saturated API server may reset the stream of this one large request: try it again.
	var err error
	for try := 0; try < 5; try++ {
		if err = b.c.DeleteAllOf(ctx, &extv1beta1.SandboxClaim{}, client.InNamespace(ns),
			client.PropagationPolicy(metav1.DeletePropagationBackground)); err == nil {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if err != nil {
		return err
	}
	deadline := time.Now().Add(b.o.readyTimeout)
	for {
		list := &sandboxv1beta1.SandboxList{}
		if err := b.c.List(ctx, list, client.InNamespace(ns), client.HasLabels{sandboxv1beta1.ClaimUIDLabel}); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d claimed sandboxes left %v after their claims were deleted", len(list.Items), b.o.readyTimeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return b.waitPoolFull(ctx)
}

func (r *result) print() {
	fmt.Printf("## %s: %s\n\n", r.name, r.about)
	fmt.Printf("claims %d (warm %d, cold %d) in %.1fs: %.1f claims/s; controller process heap after: %.0f MiB, peak RSS so far: %.0f MiB\n\n",
		r.claims, r.warm, r.claims-r.warm, r.elapsed.Seconds(), r.throughputPer, r.heapMB, r.peakRSSMB)
	fmt.Printf("| latency, ms | p50 | p90 | p99 | max |\n|---|---|---|---|---|\n")
	fmt.Printf("| Create called → Ready | %s | %s | %s | %s |\n", ms(pct(r.latencies, 50)), ms(pct(r.latencies, 90)), ms(pct(r.latencies, 99)), ms(pct(r.latencies, 100)))
	fmt.Printf("| Create returned → Ready | %s | %s | %s | %s |\n\n", ms(pct(r.fromStored, 50)), ms(pct(r.fromStored, 90)), ms(pct(r.fromStored, 99)), ms(pct(r.fromStored, 100)))
	printPhases(r.phasesBefore, r.phasesAfter)
	fmt.Printf("| API writes by kubox (verb resource) | total | per claim |\n|---|---|---|\n")
	total := 0
	for _, k := range harness.Keys(r.writes) {
		total += r.writes[k]
		fmt.Printf("| %s | %d | %.2f |\n", k, r.writes[k], float64(r.writes[k])/float64(r.claims))
	}
	fmt.Printf("| **all** | %d | %.2f |\n\n", total, float64(total)/float64(r.claims))
	fmt.Print(r.report)
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

// ctrlLogger discards controller-runtime's logs unless KUBOX_BENCH_LOG=1.
func ctrlLogger() logr.Logger {
	if os.Getenv("KUBOX_BENCH_LOG") == "1" {
		return funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	return logr.Discard()
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "tools", "install.sh")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("run from inside the kubox checkout (no hack/tools/install.sh above %s)", wd)
}

// selfPeakRSSMiB is this process's peak resident memory so far (VmHWM): the controllers', with
// the benchmark's own clients and informer beside them; 0 where /proc is not there.
func selfPeakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				return 0
			}
			return kib / 1024
		}
	}
	return 0
}
