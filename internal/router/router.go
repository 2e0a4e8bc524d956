package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/internal/audit"
	routeraudit "github.com/kubox-dev/kubox/internal/router/audit"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/e2b"
	"github.com/kubox-dev/kubox/internal/router/metrics"
	"github.com/kubox-dev/kubox/internal/router/pathroute"
	"github.com/kubox-dev/kubox/internal/router/proxy"
	"github.com/kubox-dev/kubox/internal/router/ui"
	"github.com/kubox-dev/kubox/internal/router/wake"
)

// Router is kubox-router: build it with New, run it with Start (the configured listeners) or
// Serve (a listener of yours).
type Router struct {
	cfg      Config
	log      *slog.Logger
	cache    crcache.Cache
	reviewer *authn.Reviewer
	shared   authn.SharedToken
	metrics  *metrics.Metrics
	proxy    *proxy.Proxy
	clients  *clientLimiter
	inflight chan struct{} // a slot per request in flight; nil: unlimited
	handler  http.Handler
	now      func() time.Time
	tickets  pathroute.Ledger // browser tickets redeemed (path routing)
	sessions *pathroute.Sessions
	// writer is the router's own client; lifecycle builds every lifecycle patch (internal/router/wake).
	writer    client.Client
	lifecycle *wake.Writer
	activity  *wake.Tracker
	waker     *wake.Waker
	events    *wake.Events
	bg        *wake.Background
	// e2b serves E2B's control API (internal/router/e2b); nil without Config.E2BDomain.
	e2b *e2b.API
	// dashboard serves /ui/ (dashboard.go).
	dashboard *ui.Handler
	// audit records the requests let through to sandboxes, into auditQueue (audit.go); nil
	// auditQueue: auditing is off.
	audit      *routeraudit.Recorder
	auditQueue *audit.Queue

	synced     atomic.Bool
	syncedDone chan struct{} // closed once synced is true
	cacheOnce  sync.Once
	cacheWG    sync.WaitGroup
	cacheErr   error
}

// New builds a router from cfg, reading Sandboxes and SandboxClaims and reviewing tokens
// through restConfig. It starts nothing.
func New(cfg Config, restConfig *rest.Config) (*Router, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rt := &Router{cfg: cfg, log: cfg.Log, shared: authn.NewSharedToken(cfg.SharedToken), metrics: metrics.New(),
		clients: newClientLimiter(cfg.MaxConnectionsPerClient), now: time.Now, events: wake.NewEvents(), syncedDone: make(chan struct{})}
	if cfg.MaxInflightRequests > 0 {
		rt.inflight = make(chan struct{}, cfg.MaxInflightRequests)
	}
	if rt.log == nil {
		rt.log = slog.Default()
	}
	var err error
	if rt.reviewer, err = newReviewer(cfg, restConfig); err != nil {
		return nil, err
	}
	if rt.cache, err = rt.newCache(restConfig); err != nil {
		return nil, err
	}
	if rt.writer, err = client.New(restConfig, client.Options{Scheme: newScheme()}); err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	rt.newIdle()
	if cfg.E2BDomain != "" {
		if rt.e2b, err = rt.newE2B(restConfig); err != nil {
			return nil, err
		}
	}
	if rt.dashboard, err = rt.newDashboard(restConfig); err != nil {
		return nil, err
	}
	// Last of what can fail: the audit queue starts a goroutine.
	if err := rt.newAudit(); err != nil {
		return nil, err
	}
	rt.proxy = proxy.New(proxy.Config{ProxyTimeout: cfg.ProxyTimeout, MaxResponseHeaderBytes: cfg.MaxResponseHeaderBytes,
		MaxRetries: cfg.UpstreamMaxRetries, RetryDelay: cfg.UpstreamRetryDelay}, rt.metrics, rt.log,
		proxy.Hooks{ModifyResponse: rt.confinePathResponse, Failed: func(r *http.Request, err string) { infoFrom(r.Context()).err = err }})
	rt.sessions = rt.newSessions()
	rt.handler = rt.observe(http.HandlerFunc(rt.serveHTTP))
	return rt, nil
}

// confinePathResponse keeps a sandbox's response to a path route under its path
// (pathroute.ConfineResponse).
func (rt *Router) confinePathResponse(res *http.Response, t *proxy.Target) {
	if t != nil && t.PathBase != "" {
		pathroute.ConfineResponse(res, t.PathBase, t.Addr, rt.cfg.PathRoutingRewriteResponses)
	}
}

// newReviewer builds the token and access reviewer with two clients: restConfig's for
// SubjectAccessReviews and tokens accepted before, and a copy without client-side rate limiter
// for unknown tokens, which the budget bounds without queueing (client-go's limiter would make
// every review wait behind a flood of junk).
func newReviewer(cfg Config, restConfig *rest.Config) (*authn.Reviewer, error) {
	trusted, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	unknownConfig := rest.CopyConfig(restConfig)
	unknownConfig.RateLimiter, unknownConfig.QPS = nil, -1
	unknown, err := kubernetes.NewForConfig(unknownConfig)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	return authn.NewReviewer(authn.Clients{Trusted: trusted, Unknown: unknown}, cfg.AuthCacheTTL,
		authn.NewBudget(cfg.TokenReviewBudget, clock.RealClock{}), clock.RealClock{}), nil
}

// newIdle sets up what serves idle policies: the lifecycle writer, the activity tracker and the
// waker (internal/router/wake).
func (rt *Router) newIdle() {
	rt.bg = wake.NewBackground()
	rt.lifecycle = wake.NewWriter(rt.writer)
	rt.activity = wake.NewTracker(wake.TrackerDeps{Write: rt.lifecycle.LastActivity, Lookup: rt.cachedSandbox, Now: rt.now,
		Writes: rt.metrics.ActivityWrites, Log: rt.log, BG: rt.bg})
	rt.waker = wake.NewWaker(wake.WakerDeps{Timeout: rt.cfg.WakeTimeout, Now: rt.now, Current: rt.cachedSandbox,
		Resume: rt.resumeSandbox, Serving: rt.serving, Events: rt.events, BG: rt.bg})
}

// MetricsHandler serves the router's Prometheus metrics.
func (rt *Router) MetricsHandler() http.Handler { return rt.metrics.Handler() }

// HealthHandler serves /healthz and /readyz for kubelet's probes.
func (rt *Router) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(healthPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc(readyPath, func(w http.ResponseWriter, _ *http.Request) { rt.serveReady(w) })
	return mux
}

// StartCache starts the informer cache in the background, once; it stops when ctx ends.
// Serve and Start call it.
func (rt *Router) StartCache(ctx context.Context) {
	rt.cacheOnce.Do(func() {
		rt.bg.Go(rt.activity.Run)
		rt.bg.Go(rt.dashboard.Run)
		context.AfterFunc(ctx, rt.bg.Cancel)
		rt.cacheWG.Add(2)
		go func() {
			defer rt.cacheWG.Done()
			if err := rt.cache.Start(ctx); err != nil {
				rt.cacheErr = err
				rt.log.Error("The informer cache stopped", "error", err)
			}
		}()
		go func() {
			defer rt.cacheWG.Done()
			if rt.cache.WaitForCacheSync(ctx) {
				rt.synced.Store(true)
				close(rt.syncedDone)
				rt.log.Info("Loaded Sandboxes and SandboxClaims; ready")
			}
		}()
	})
}

// WaitForCacheSync waits until the cache has loaded every Sandbox and SandboxClaim, and reports
// whether it did before ctx ended. Call it after Serve, Start or StartCache: a cache that is not
// started never syncs.
func (rt *Router) WaitForCacheSync(ctx context.Context) bool {
	if !rt.cache.WaitForCacheSync(ctx) {
		return false
	}
	select {
	case <-rt.syncedDone:
		return true
	case <-ctx.Done():
		return false
	}
}

// Serve starts the cache and serves the main handler on l until ctx ends, then finishes the
// requests in flight (for at most ShutdownTimeout) and waits for the cache to stop.
func (rt *Router) Serve(ctx context.Context, l net.Listener) error {
	rt.StartCache(ctx)
	err := rt.serve(ctx, l, rt.mainServer())
	rt.closeAudit()
	rt.proxy.CloseIdle()
	rt.bg.Stop()
	rt.cacheWG.Wait()
	return err
}

// Start listens on the configured addresses (main, metrics, health) and serves until ctx ends.
func (rt *Router) Start(ctx context.Context) error {
	servers := []struct {
		addr string
		srv  *http.Server
	}{
		{rt.cfg.HTTPAddr, rt.mainServer()},
		{rt.cfg.MetricsAddr, plainServer(rt.MetricsHandler())},
		{rt.cfg.HealthAddr, plainServer(rt.HealthHandler())},
	}
	listeners := map[net.Listener]*http.Server{}
	for i, s := range servers {
		if i > 0 && (s.addr == "" || s.addr == "0") {
			continue
		}
		l, err := net.Listen("tcp", s.addr)
		if err != nil {
			for l := range listeners {
				_ = l.Close()
			}
			return fmt.Errorf("listening on %s: %w", s.addr, err)
		}
		listeners[l] = s.srv
		rt.log.Info("Listening", "address", l.Addr().String())
	}
	rt.StartCache(ctx)
	errs := make(chan error, len(listeners))
	for l, srv := range listeners {
		go func() { errs <- rt.serve(ctx, l, srv) }()
	}
	var all []error
	for range listeners {
		all = append(all, <-errs)
	}
	rt.closeAudit()
	rt.proxy.CloseIdle()
	rt.bg.Stop()
	rt.cacheWG.Wait()
	return errors.Join(append(all, rt.cacheErr)...)
}

// serve runs srv on l until ctx ends, then shuts it down gracefully.
func (rt *Router) serve(ctx context.Context, l net.Listener, srv *http.Server) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), rt.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// mainServer speaks HTTP/1.1 and, without TLS, HTTP/2 (h2c) for gRPC clients.
func (rt *Router) mainServer() *http.Server {
	s := &http.Server{Handler: rt.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: rt.cfg.IdleTimeout,
		MaxHeaderBytes: maxRequestHeaderBytes, ErrorLog: slog.NewLogLogger(rt.log.Handler(), slog.LevelWarn),
		// What an h2c stream may make the router buffer of a request body its sandbox reads slowly.
		HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: streamWindow}}
	s.Protocols = new(http.Protocols)
	s.Protocols.SetHTTP1(true)
	s.Protocols.SetUnencryptedHTTP2(true)
	return s
}

func plainServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
}
