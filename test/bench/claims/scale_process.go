package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubox-dev/kubox/test/bench/harness"
)

// controllerProcess is kubox-controller, built as released and run as a child of the benchmark
// with its metrics, health probes and pprof on loopback ports and its log in a file.
type controllerProcess struct {
	bin, kubeconfig, log            string
	metricsURL, healthURL, pprofURL string
	args                            []string
	gomemlimit                      string // the GOMEMLIMIT it runs with; "off" for none
	proc                            *harness.Process
}

func newControllerProcess(dir string, kubeconfig []byte) (*controllerProcess, error) {
	c := &controllerProcess{kubeconfig: filepath.Join(dir, "kubeconfig"), log: filepath.Join(dir, "kubox-controller.log")}
	if err := os.WriteFile(c.kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	var err error
	if c.bin, err = harness.BuildStatic(dir, "kubox-controller"); err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = harness.FreePort(); err != nil {
			return nil, err
		}
	}
	c.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
	c.healthURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1])
	c.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", ports[2])
	c.args = []string{"--kubeconfig=" + c.kubeconfig, "--leader-elect=false",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", ports[2])}
	return c, nil
}

// start starts the controller with GOMEMLIMIT=c.gomemlimit and waits until it answers its health
// probe. The child inherits the benchmark's environment (harness.StartProcessLogging), so the
// variable is set in it; the benchmark's own runtime read its GOMEMLIMIT when it started.
func (c *controllerProcess) start() error {
	if err := os.Setenv("GOMEMLIMIT", c.gomemlimit); err != nil {
		return err
	}
	logf, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }() // the child holds its own descriptor
	c.proc, err = harness.StartProcessLogging(logf, c.bin, c.healthURL, c.args...)
	if err != nil {
		return fmt.Errorf("%w; see %s", err, c.log)
	}
	return nil
}

func (c *controllerProcess) stop() {
	if c.proc != nil {
		c.proc.Stop()
		c.proc = nil
	}
}

// memFigures is the process's memory from /proc/<pid>/status: resident in all, of which
// anonymous (heap, stacks, runtime) and file-backed (the binary's pages), and the peak.
type memFigures struct{ rss, anon, file, peak float64 }

func (c *controllerProcess) memory() (memFigures, error) {
	var m memFigures
	for _, f := range []struct {
		dst   *float64
		field string
	}{{&m.rss, "VmRSS"}, {&m.anon, "RssAnon"}, {&m.file, "RssFile"}, {&m.peak, "VmHWM"}} {
		kib, err := c.proc.StatusKiB(f.field)
		if err != nil {
			return m, err
		}
		*f.dst = float64(kib) / 1024
	}
	return m, nil
}

// restFigures is the controller measured at rest: nothing changes in the cluster.
type restFigures struct {
	window                           time.Duration
	mem                              memFigures
	heapMiB, sysMiB, liveMiB         float64
	reconcilesPerSec, requestsPerSec float64
	reconciles, requests             map[string]float64
}

// measureRest samples the controller's counters at both ends of window.
func (c *controllerProcess) measureRest(ctx context.Context, window time.Duration) (restFigures, error) {
	f := restFigures{window: window}
	before, err := c.metrics()
	if err != nil {
		return f, err
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return f, ctx.Err()
	}
	after, err := c.metrics()
	if err != nil {
		return f, err
	}
	if f.mem, err = c.memory(); err != nil {
		return f, err
	}
	f.heapMiB = after.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	f.sysMiB = after.sum("go_memstats_sys_bytes", nil) / (1 << 20)
	if f.liveMiB, err = c.liveHeapMiB(); err != nil {
		return f, err
	}
	f.reconciles = after.delta(before, "controller_runtime_reconcile_total")
	f.requests = after.delta(before, "rest_client_requests_total")
	f.reconcilesPerSec = total(f.reconciles) / window.Seconds()
	f.requestsPerSec = total(f.requests) / window.Seconds()
	return f, nil
}

func (f *restFigures) print() {
	fmt.Printf("| RSS MiB (anon + file) | peak RSS MiB | heap in use MiB | live heap after a GC, MiB | Go runtime sys MiB | reconciles/s | API requests/s |\n|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %.0f (%.0f + %.0f) | %.0f | %.0f | %.0f | %.0f | %.3f | %.3f |\n\n", f.mem.rss, f.mem.anon, f.mem.file, f.mem.peak,
		f.heapMiB, f.liveMiB, f.sysMiB, f.reconcilesPerSec, f.requestsPerSec)
	for _, d := range []map[string]float64{f.reconciles, f.requests} {
		for _, k := range slices.Sorted(maps.Keys(d)) {
			fmt.Printf("- %s: +%.0f\n", k, d[k])
		}
	}
	if len(f.reconciles)+len(f.requests) > 0 {
		fmt.Println()
	}
}

// syncFigures is a restart: the time to the first reconcile (every informer synced: controllers
// start their workers only then) and to the end of the first full pass (syncDone).
type syncFigures struct {
	bin, gomemlimit      string
	synced, full         time.Duration
	reconciles, requests int
	mem                  memFigures
	heapMiB, liveMiB     float64
}

// restart stops the controller, starts it again and polls its metrics until its first pass over
// sandboxes Sandboxes and pools pools is done; then it lets it rest 20 s and reads its memory.
// bin and gomemlimit replace the controller's binary and GOMEMLIMIT from now on.
func (c *controllerProcess) restart(ctx context.Context, bin, gomemlimit string, sandboxes, pools int) (syncFigures, error) {
	c.stop()
	c.bin, c.gomemlimit = bin, gomemlimit
	f := syncFigures{bin: c.bin, gomemlimit: gomemlimit}
	start := time.Now()
	if err := c.start(); err != nil {
		return f, err
	}
	deadline := start.Add(*scaleTimeout)
	for {
		// The health probe can answer before the metrics server listens: retry until the deadline.
		m, err := c.metrics()
		if err != nil && time.Now().After(deadline) {
			return f, err
		}
		if err != nil {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if f.synced == 0 && m.sum("controller_runtime_reconcile_total", nil) > 0 {
			f.synced = time.Since(start)
		}
		if syncDone(m, sandboxes, pools) {
			f.full = time.Since(start)
			f.reconciles = int(m.sum("controller_runtime_reconcile_total", nil))
			f.requests = int(m.sum("rest_client_requests_total", nil))
			break
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("%w within %v", errNoSync, *scaleTimeout)
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return f, ctx.Err()
		}
	}
	time.Sleep(20 * time.Second)
	m, err := c.metrics()
	if err != nil {
		return f, err
	}
	f.heapMiB = m.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	if f.mem, err = c.memory(); err != nil {
		return f, err
	}
	f.liveMiB, err = c.liveHeapMiB()
	return f, err
}

// liveHeapMiB forces a GC (by asking for a heap profile) and returns the heap allocated after
// it: the live heap, which heap in use overstates by whatever the GC has not yet collected.
func (c *controllerProcess) liveHeapMiB() (float64, error) {
	resp, err := http.Get(c.pprofURL)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	m, err := c.metrics()
	if err != nil {
		return 0, err
	}
	return m.sum("go_memstats_heap_alloc_bytes", nil) / (1 << 20), nil
}

// heapProfile saves the controller's heap profile (after a GC) to path and returns the top of
// `go tool pprof -top` by bytes in use.
func (c *controllerProcess) heapProfile(path string) (string, error) {
	resp, err := http.Get(c.pprofURL)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", c.pprofURL, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", "-sample_index=inuse_space", path).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %v\n%s", err, out)
	}
	return string(out), nil
}

// promText is one scrape of a Prometheus text exposition: series ("name{labels}") to value.
type promText map[string]float64

func (c *controllerProcess) metrics() (promText, error) {
	resp, err := http.Get(c.metricsURL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", c.metricsURL, resp.Status)
	}
	return parseProm(resp.Body)
}

func parseProm(r io.Reader) (promText, error) {
	m := promText{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// labelFilter selects series by their label text ("{a=\"x\",b=\"y\"}"); nil selects all.
type labelFilter func(labels string) bool

// label selects the series with label k equal to v.
func label(k, v string) labelFilter {
	pair := k + `="` + v + `"`
	return func(labels string) bool {
		return strings.Contains(labels, "{"+pair) || strings.Contains(labels, ","+pair)
	}
}

// series splits a series into its name and label text.
func series(s string) (name, labels string) {
	if i := strings.IndexByte(s, '{'); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

func (m promText) sum(name string, f labelFilter) float64 {
	var t float64
	for s, v := range m {
		if n, l := series(s); n == name && (f == nil || f(l)) {
			t += v
		}
	}
	return t
}

// delta returns, for each series of name that grew since before, by how much.
func (m promText) delta(before promText, name string) map[string]float64 {
	d := map[string]float64{}
	for s, v := range m {
		if n, _ := series(s); n == name && v > before[s] {
			d[s] = v - before[s]
		}
	}
	return d
}

func total(d map[string]float64) float64 {
	var t float64
	for _, v := range d {
		t += v
	}
	return t
}
