package router

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// routerBinaryEnv names a kubox-router binary to test instead of building one.
const routerBinaryEnv = "KUBOX_ROUTER_BINARY"

// hostileCase is a sandbox that attacks the router, and what its parallel clients do.
type hostileCase struct {
	name string
	// serve answers a connection (raw, for misbehaviour net/http will not produce) or handler
	// answers requests (HTTP/1.1 and h2c).
	serve   func(c net.Conn)
	handler http.HandlerFunc
	// h2c: the clients speak h2c to the router (and the router to the sandbox).
	h2c bool
	// request makes a client's request; nil: GET of the sandbox's root.
	request func(ctx context.Context, url string) *http.Request
	// check judges one client's response (err: the client's error); nil: anything goes.
	check func(res *http.Response, body []byte, err error) error
	// hold keeps each response open this long without reading its body.
	hold time.Duration
}

// TestHostileSandboxesCannotExhaustRouterMemory runs kubox-router as its own process (its peak
// resident memory is then the router's alone, measured by the kernel: VmHWM) against a table of
// hostile sandboxes, each hit by more parallel requests than --max-inflight-requests, and asserts
// the peak stays under the figure the configuration states: the memory measured once the router
// has started and served a request, plus Config.MemoryBound().
func TestHostileSandboxesCannotExhaustRouterMemory(t *testing.T) {
	const parallel = 160
	cfg := router.DefaultConfig()
	cfg.MaxInflightRequests = 64
	cfg.MaxResponseHeaderBytes = 64 << 10

	ns := env.NewNamespace(t)
	canary := startRecordingServer(t) // where redirects point; must never be asked anything
	big := strings.Repeat("h", 8<<20)
	endless := func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("e", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	hugeHeaders := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Big", big)
		_, _ = io.WriteString(w, "x")
	}
	want502 := func(res *http.Response, body []byte, err error) error {
		if err != nil || (res.StatusCode != http.StatusBadGateway && res.StatusCode != http.StatusServiceUnavailable) {
			return fmt.Errorf("%v %v %.200s; want 502 (headers over the limit) or 503 (router full)", err, status(res), body)
		}
		return nil
	}
	cases := []hostileCase{
		{name: "8 MiB response headers, HTTP/1.1", handler: hugeHeaders, check: want502},
		{name: "8 MiB response headers, h2c", handler: hugeHeaders, h2c: true, check: want502},
		{name: "endless body, client never reads, HTTP/1.1", handler: endless, hold: 2 * time.Second},
		{name: "endless body, client never reads, h2c", handler: endless, h2c: true, hold: 2 * time.Second},
		{name: "endless request body, sandbox never reads, h2c", h2c: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				http.NewResponseController(w).Flush()
				<-r.Context().Done()
			},
			request: func(ctx context.Context, url string) *http.Request {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, endlessReader{})
				return req
			}, hold: 2 * time.Second},
		{name: "slowloris response headers", serve: func(c net.Conn) {
			readRequestHead(c)
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Slow: ")
			for {
				if _, err := c.Write([]byte("s")); err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}, check: func(res *http.Response, body []byte, err error) error {
			if err != nil || (res.StatusCode != http.StatusGatewayTimeout && res.StatusCode != http.StatusServiceUnavailable) {
				return fmt.Errorf("%v %v %.200s; want 504 or 503", err, status(res), body)
			}
			return nil
		}},
		{name: "endless 1xx responses with 60 KiB headers", serve: func(c net.Conn) {
			readRequestHead(c)
			early := "HTTP/1.1 103 Early Hints\r\nLink: <" + strings.Repeat("l", 60<<10) + ">\r\n\r\n"
			for {
				if _, err := io.WriteString(c, early); err != nil {
					return
				}
			}
		}},
		{name: "redirect to another host", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, canary.URL+"/stolen", http.StatusFound)
		}, check: func(res *http.Response, body []byte, err error) error {
			if err != nil || (res.StatusCode != http.StatusFound && res.StatusCode != http.StatusServiceUnavailable) {
				return fmt.Errorf("%v %v %.200s; want the 302 passed on (or 503)", err, status(res), body)
			}
			return nil
		}},
		{name: "Set-Cookie kubox-token", handler: func(w http.ResponseWriter, _ *http.Request) {
			for _, c := range tokenSetCookies {
				w.Header().Add("Set-Cookie", c)
			}
			_, _ = io.WriteString(w, "ok")
		}, check: func(res *http.Response, body []byte, err error) error {
			if err != nil {
				return err
			}
			if c := res.Header.Values("Set-Cookie"); len(c) > 0 {
				return fmt.Errorf("the client got Set-Cookie %q", c)
			}
			return nil
		}},
	}

	sandboxes := make([]string, len(cases))
	for i, tc := range cases {
		sandboxes[i] = fmt.Sprintf("hostile-%d", i)
		port := startHostile(t, tc)
		sb := createSandbox(t, ns, sandboxes[i], &sandboxv1beta1.AgentSpec{Port: ptrInt32(port)})
		markReady(t, sb, "127.0.0.1")
	}
	benign := startRecordingServer(t)
	sb := createSandbox(t, ns, "benign", &sandboxv1beta1.AgentSpec{Port: ptrInt32(benign.port())})
	markReady(t, sb, "127.0.0.1")

	// The bound is on what requests in flight hold (live memory); how far garbage may pile up
	// above the live memory is the garbage collector's choice, which GOMEMLIMIT governs (the
	// chart sets it from the container's limit). So: a first run measures the Go runtime's share
	// of the router's resident memory at rest, and the attacked run gets the Go memory limit a
	// container sized at the stated figure would leave it: 90% of that share plus the bound.
	bin := routerBinary(t)
	bound := cfg.MemoryBound()
	p0 := startRouterProcess(t, bin, ns, cfg, 0)
	eventuallyStatus(t, http.StatusOK, http.MethodGet, p0.url+"/sandboxes/"+ns+"/benign/", "", bearer(sharedToken))
	goAtRest := p0.goResident(t)
	t.Logf("kubox-router at rest: %d KiB resident, of which the Go runtime's %d KiB", p0.memory(t).rss>>10, goAtRest>>10)
	p0.stop()

	goMemLimit := (goAtRest + bound) / 10 * 9 // with headroom, as the router leaves itself in a container
	p := startRouterProcess(t, bin, ns, cfg, goMemLimit)
	// The cache sees Sandboxes in the order they were written: once the last is routed, all are.
	eventuallyStatus(t, http.StatusOK, http.MethodGet, p.url+"/sandboxes/"+ns+"/benign/", "", bearer(sharedToken))
	baseline := p.memory(t).rss
	t.Logf("kubox-router: %d KiB resident after start (GOMEMLIMIT %d KiB); stated bound for requests in flight: %d in flight × %d KiB = %d KiB; "+
		"limit asserted: %d KiB", baseline>>10, goMemLimit>>10, cfg.MaxInflightRequests, cfg.PerRequestMemoryBound()>>10, bound>>10, (baseline+bound)>>10)

	for i, tc := range cases {
		url := p.url + "/sandboxes/" + ns + "/" + sandboxes[i] + "/"
		codes := runParallel(t, tc, url, parallel)
		m := p.memory(t)
		t.Logf("%-48s peak %6d KiB resident (now %6d KiB); answers %v", tc.name, m.hwm>>10, m.rss>>10, codes)
		// Every request's slot comes back once its client is gone.
		start := time.Now()
		for n := p.metric(t, "sandbox_router_inflight_requests"); n != 0; n = p.metric(t, "sandbox_router_inflight_requests") {
			if time.Since(start) > 20*time.Second {
				t.Fatalf("after %q, %v requests are still in flight in the router %v after their clients went away", tc.name, n, time.Since(start).Round(time.Second))
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%-48s slots back after %v", "", time.Since(start).Round(10*time.Millisecond))
	}
	canary.mu.Lock()
	stolen := canary.last
	canary.mu.Unlock()
	if r := stolen; r != nil {
		t.Errorf("the router followed a sandbox's redirect to another host: %s %s", r.Method, r.URL)
	}
	m := p.memory(t)
	t.Logf("kubox-router peak resident memory: %d KiB (%d KiB over its start); stated figure %d KiB", m.hwm>>10, (m.hwm-baseline)>>10, (baseline+bound)>>10)
	if m.hwm > baseline+bound {
		t.Errorf("the router's peak resident memory %d KiB passed the stated figure %d KiB (%d KiB at start + %d in flight × %d KiB)",
			m.hwm>>10, (baseline+bound)>>10, baseline>>10, cfg.MaxInflightRequests, cfg.PerRequestMemoryBound()>>10)
	}
	// Still serving.
	if res := do(t, http.MethodGet, p.url+"/sandboxes/"+ns+"/benign/", "", bearer(sharedToken)); res.code != http.StatusOK {
		t.Errorf("after the attacks, a benign sandbox: %s; want 200", res)
	}
}

func status(res *http.Response) string {
	if res == nil {
		return "no response"
	}
	return res.Status
}

type endlessReader struct{}

func (endlessReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'u'
	}
	return len(p), nil
}

// readRequestHead reads a request's line and headers from c.
func readRequestHead(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			return
		}
	}
}

// startHostile serves a hostile case on 127.0.0.1 and returns its port.
func startHostile(t *testing.T, tc hostileCase) int {
	t.Helper()
	if tc.handler != nil {
		return startHostileServer(t, tc.handler)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		_ = l.Close()
		conns.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			wg.Go(func() { defer c.Close(); tc.serve(c) })
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}

// runParallel sends n requests of tc at once and returns how many got each status.
func runParallel(t *testing.T, tc hostileCase, url string, n int) map[string]int {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols), MaxResponseHeaderBytes: 1 << 20, MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}
	if tc.h2c {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	// The clients' connections are closed when the case ends, whatever state their streams
	// are in: the router must then give every slot back.
	var conns sync.Map
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			conns.Store(c, true)
		}
		return c, err
	}
	defer conns.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
	c := &http.Client{Transport: &contract.BearerTransport{Token: sharedToken, Base: tr},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var mu sync.Mutex
	codes := map[string]int{}
	var failures atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if tc.request != nil {
				req = tc.request(ctx, url)
			}
			res, err := c.Do(req)
			var body []byte
			key := "error"
			if err == nil {
				key = strconv.Itoa(res.StatusCode)
				if tc.hold > 0 && res.StatusCode == http.StatusOK {
					time.Sleep(tc.hold)
				} else {
					body, _ = io.ReadAll(io.LimitReader(res.Body, 1<<20))
				}
				_ = res.Body.Close()
			}
			if tc.check != nil {
				if cerr := tc.check(res, body, err); cerr != nil && failures.Add(1) <= 3 {
					t.Errorf("%s: %v", tc.name, cerr)
				}
			}
			mu.Lock()
			codes[key]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return codes
}

// routerProcess is kubox-router running as its own process.
type routerProcess struct {
	url, metricsURL string
	pid             int
	stop            func()
}

// metrics scrapes the router's unlabelled metrics once: name → value.
func (p *routerProcess) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	res, err := http.Get(p.metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if n, v, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(n, "#") {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[n] = f
			}
		}
	}
	return out
}

// metric is the value of the router's metric name (without labels), -1 when it has none.
func (p *routerProcess) metric(t *testing.T, name string) float64 {
	t.Helper()
	if v, ok := p.metrics(t)[name]; ok {
		return v
	}
	return -1
}

// goResident is the memory the Go runtime holds from the OS and has not released, from the
// router's metrics.
func (p *routerProcess) goResident(t *testing.T) int64 {
	t.Helper()
	m := p.metrics(t)
	return int64(m["go_memstats_sys_bytes"] - m["go_memstats_heap_released_bytes"])
}

type memory struct{ rss, hwm int64 }

// memory reads the process's resident memory now and at its peak, from /proc.
func (p *routerProcess) memory(t *testing.T) memory {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		t.Fatalf("reading the router's memory: %v", err)
	}
	var m memory
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			m.rss = kb << 10
		case "VmHWM":
			m.hwm = kb << 10
		}
	}
	return m
}

// routerBinary builds cmd/kubox-router, or returns $KUBOX_ROUTER_BINARY.
func routerBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(routerBinaryEnv); bin != "" {
		return bin
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kubox-router")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kubox-router")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubox-router: %v\n%s", err, out)
	}
	return bin
}

// startRouterProcess runs bin for namespace ns with cfg's limits (and GOMEMLIMIT goMemLimit
// bytes, unless 0) until stop or the end of the test.
func startRouterProcess(t *testing.T, bin, ns string, cfg router.Config, goMemLimit int64) *routerProcess {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	port, health, metricsPort := freePort(t), freePort(t), freePort(t)
	cmd := exec.Command(bin,
		"--kubeconfig="+write("kubeconfig", env.KubeConfig),
		"--agent-token-key-file="+write("key", key),
		"--shared-token-file="+write("shared", []byte(sharedToken)),
		"--namespace="+ns,
		"--allow-loopback-pod-ip",
		"--access-log=false",
		fmt.Sprintf("--http-bind-address=127.0.0.1:%d", port),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", health),
		"--proxy-timeout=3s",
		"--upstream-max-retries=0",
		"--max-connections-per-client=0",
		fmt.Sprintf("--max-inflight-requests=%d", cfg.MaxInflightRequests),
		fmt.Sprintf("--max-response-header-bytes=%d", cfg.MaxResponseHeaderBytes),
	)
	cmd.Env = os.Environ()
	if goMemLimit > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOMEMLIMIT=%d", goMemLimit))
	}
	cmd.Stderr = framework.TestWriter{T: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	p := &routerProcess{url: fmt.Sprintf("http://127.0.0.1:%d", port), pid: cmd.Process.Pid, stop: stop,
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
	framework.Eventually(t, func() (bool, string) {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err != nil {
			return false, err.Error()
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK, "readyz: " + res.Status
	})
	return p
}
