// Package apiconn spreads kubox-controller's requests to the Kubernetes API over several HTTP/2
// connections. client-go sends every request of a process over one HTTP/2 connection per API
// server, and that connection carries at most the server's --http2-max-streams-per-connection
// requests at once; a controller with hundreds of workers can queue behind that limit while the
// server has capacity left. agent-sandbox's controller offers the same two settings under the
// flags --api-connections and --separate-watch-connection.
package apiconn

import (
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// Shard returns a copy of cfg whose requests other than watches go round-robin over n
// connections of their own, and whose watches go over one more connection when separateWatch
// (else over the first of the n). With n <= 1 and no separate watch connection it returns cfg.
// Each connection is a transport built from cfg (its TLS, credentials and impersonation); the
// copy keeps cfg's rate limits, content types, user agent and timeout.
func Shard(cfg *rest.Config, n int, separateWatch bool) (*rest.Config, error) {
	if n <= 1 && !separateWatch {
		return cfg, nil
	}
	n = max(n, 1)
	rt := &roundRobin{shards: make([]http.RoundTripper, n)}
	for i := range rt.shards {
		t, err := ownTransport(cfg)
		if err != nil {
			return nil, fmt.Errorf("building API connection %d of %d: %w", i+1, n, err)
		}
		rt.shards[i] = t
	}
	rt.watch = rt.shards[0]
	if separateWatch {
		t, err := ownTransport(cfg)
		if err != nil {
			return nil, fmt.Errorf("building the API connection for watches: %w", err)
		}
		rt.watch = t
	}
	return &rest.Config{
		Host: cfg.Host, APIPath: cfg.APIPath, ContentConfig: cfg.ContentConfig, UserAgent: cfg.UserAgent,
		QPS: cfg.QPS, Burst: cfg.Burst, RateLimiter: cfg.RateLimiter, Timeout: cfg.Timeout,
		WarningHandler: cfg.WarningHandler, WarningHandlerWithContext: cfg.WarningHandlerWithContext,
		Transport: rt,
	}, nil
}

// ownTransport builds a transport of cfg that shares no connection with any other: client-go
// caches transports by their TLS settings, and a dial function of its own keeps this one out of
// that cache.
func ownTransport(cfg *rest.Config) (http.RoundTripper, error) {
	c := rest.CopyConfig(cfg)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	c.Dial = d.DialContext
	return rest.TransportFor(c)
}

// roundRobin sends watches to watch and every other request to the next of shards.
type roundRobin struct {
	shards []http.RoundTripper
	watch  http.RoundTripper
	next   atomic.Uint64
}

func (r *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWatch(req) {
		return r.watch.RoundTrip(req)
	}
	i := r.next.Add(1) - 1
	return r.shards[i%uint64(len(r.shards))].RoundTrip(req)
}

// isWatch reports whether req is a watch (a long-running GET with watch=true or watch=1).
func isWatch(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}
