package router

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// requestInfo collects what the handler learns about a request, for the access log and metrics.
type requestInfo struct {
	route, namespace, name, principal, err string
	// start is when the request arrived.
	start time.Time
}

type infoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	if i, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return i
	}
	return &requestInfo{}
}

// recorder remembers the status and size of a response. ReverseProxy reaches Flush and Hijack
// through http.ResponseController, which follows Unwrap; Hijack is wrapped to see upgrades.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 || code == http.StatusSwitchingProtocols {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (w *recorder) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// observe wraps the main handler: in-flight gauge, per-client limit, request metrics, access log.
func (rt *Router) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == healthPath || r.URL.Path == readyPath {
			if r.Header.Get(headerID) == "" {
				next.ServeHTTP(w, r)
				return
			}
		}
		start := time.Now()
		rt.metrics.Inflight.Inc()
		defer rt.metrics.Inflight.Dec()
		info := &requestInfo{start: start}
		rec := &recorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		client := clientIP(r)
		if release, ok := rt.clients.acquire(client); !ok {
			writeError(rec, errorf(http.StatusTooManyRequests, "client %s has %d requests in flight, the router's limit "+
				"(--max-connections-per-client); wait for some to finish", client, rt.cfg.MaxConnectionsPerClient))
		} else if !rt.acquireInflight() {
			release()
			rec.Header().Set("Retry-After", "1")
			writeError(rec, errorf(http.StatusServiceUnavailable, "the router has %d requests in flight, its limit "+
				"(--max-inflight-requests), which bounds its memory; retry shortly, or add router replicas", rt.cfg.MaxInflightRequests))
		} else {
			defer release()
			defer rt.releaseInflight()
			next.ServeHTTP(rec, r)
		}
		rt.record(r, rec, info, time.Since(start))
	})
}

// acquireInflight takes one of the router's slots for requests in flight, without waiting.
func (rt *Router) acquireInflight() bool {
	if rt.inflight == nil {
		return true
	}
	select {
	case rt.inflight <- struct{}{}:
		return true
	default:
		return false
	}
}

func (rt *Router) releaseInflight() {
	if rt.inflight != nil {
		<-rt.inflight
	}
}

func (rt *Router) record(r *http.Request, rec *recorder, info *requestInfo, d time.Duration) {
	code := rec.status
	if code == 0 {
		code = http.StatusOK
	}
	rt.metrics.Requests.WithLabelValues(r.Method, strconv.Itoa(code), info.namespace).Inc()
	rt.metrics.Duration.WithLabelValues(r.Method, info.namespace).Observe(d.Seconds())
	if !rt.cfg.AccessLog {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("proto", r.Proto),
		slog.Int("status", code), slog.Int64("bytes", rec.bytes), slog.Float64("durationSeconds", d.Seconds()),
		slog.String("client", clientIP(r)), slog.String("route", info.route),
	}
	for _, kv := range [][2]string{{"namespace", info.namespace}, {"name", info.name}, {"principal", info.principal}, {"error", info.err}} {
		if kv[1] != "" {
			attrs = append(attrs, slog.String(kv[0], kv[1]))
		}
	}
	rt.log.LogAttrs(r.Context(), slog.LevelInfo, "Request", attrs...)
}

// clientIP is the address the connection comes from. X-Forwarded-For is not trusted: anyone
// can send it.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientLimiter bounds the requests each client has in flight.
type clientLimiter struct {
	max      int
	mu       sync.Mutex
	inflight map[string]int
}

func newClientLimiter(max int) *clientLimiter {
	return &clientLimiter{max: max, inflight: map[string]int{}}
}

// acquire takes a slot for client; release gives it back.
func (l *clientLimiter) acquire(client string) (release func(), ok bool) {
	if l.max <= 0 {
		return func() {}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[client] >= l.max {
		return nil, false
	}
	l.inflight[client]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inflight[client]--; l.inflight[client] <= 0 {
			delete(l.inflight, client)
		}
	}, true
}
