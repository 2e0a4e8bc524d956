package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/metrics"
	"github.com/kubox-dev/kubox/internal/router/ui"
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
	upstream *upstream
	proxy    *httputil.ReverseProxy
	clients  *clientLimiter
	inflight chan struct{} // a slot per request in flight; nil: unlimited
	handler  http.Handler
	now      func() time.Time
	tickets  ticketLedger // browser tickets redeemed (path routing)
	// writer patches Sandboxes: their last activity, and the resume of a sandbox being woken.
	writer   client.Client
	activity *activityTracker
	waker    *waker
	bg       *background
	// e2bKube acts with the caller's token for E2B's control API; e2bMux routes it (e2b*.go).
	e2bKube client.Client
	e2bMux  *http.ServeMux
	// dashboard serves /ui/ (dashboard.go).
	dashboard *ui.Handler

	synced    atomic.Bool
	cacheOnce sync.Once
	cacheWG   sync.WaitGroup
	cacheErr  error
}

// New builds a router from cfg, reading Sandboxes and SandboxClaims and reviewing tokens
// through restConfig. It starts nothing.
func New(cfg Config, restConfig *rest.Config) (*Router, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rt := &Router{cfg: cfg, log: cfg.Log, shared: authn.NewSharedToken(cfg.SharedToken), metrics: metrics.New(),
		clients: newClientLimiter(cfg.MaxConnectionsPerClient), now: time.Now}
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
	if cfg.E2BDomain != "" {
		if rt.e2bKube, err = newE2BClient(restConfig, client.Options{Scheme: newScheme(), Mapper: rt.writer.RESTMapper()}); err != nil {
			return nil, err
		}
		rt.e2bMux = rt.newE2BMux()
	}
	if rt.dashboard, err = rt.newDashboard(restConfig); err != nil {
		return nil, err
	}
	rt.newIdle()
	rt.upstream = rt.newUpstream()
	rt.proxy = rt.newProxy()
	rt.handler = rt.observe(http.HandlerFunc(rt.serveHTTP))
	return rt, nil
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

// newIdle sets up what serves idle policies: the activity tracker and the waker.
func (rt *Router) newIdle() {
	rt.bg = newBackground()
	rt.activity = &activityTracker{write: rt.writeLastActivity, lookup: rt.cachedSandbox, now: rt.now,
		writes: rt.metrics.ActivityWrites, log: rt.log, bg: rt.bg, bySandbox: map[types.UID]*activity{}}
	rt.waker = &waker{timeout: rt.cfg.WakeTimeout, now: rt.now, current: rt.cachedSandbox, resume: rt.resumeSandbox,
		serving: rt.serving, bg: rt.bg, ops: map[types.UID]*wakeOp{}}
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
		rt.bg.goBackground(rt.activity.run)
		rt.bg.goBackground(rt.dashboard.Run)
		context.AfterFunc(ctx, rt.bg.cancel)
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
				rt.log.Info("Loaded Sandboxes and SandboxClaims; ready")
			}
		}()
	})
}

// WaitForCacheSync waits until the cache has loaded every Sandbox and SandboxClaim, and reports
// whether it did before ctx ended. Call it after Serve, Start or StartCache: a cache that is not
// started never syncs.
func (rt *Router) WaitForCacheSync(ctx context.Context) bool {
	return rt.cache.WaitForCacheSync(ctx) && waitTrue(ctx, &rt.synced)
}

func waitTrue(ctx context.Context, b *atomic.Bool) bool {
	for !b.Load() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// Serve starts the cache and serves the main handler on l until ctx ends, then finishes the
// requests in flight (for at most ShutdownTimeout) and waits for the cache to stop.
func (rt *Router) Serve(ctx context.Context, l net.Listener) error {
	rt.StartCache(ctx)
	err := rt.serve(ctx, l, rt.mainServer())
	rt.upstream.closeIdle()
	rt.bg.stop()
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
	rt.upstream.closeIdle()
	rt.bg.stop()
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
