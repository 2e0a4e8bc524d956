package sandboxwarmpool

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// slowSandboxWatches makes the manager's informers see every change to a Sandbox lag seconds
// late, as a loaded API server or controller does, while everything else (reads of the
// API server, the controller's writes) stays fast. It is how a test makes the informer cache
// visibly stale behind the controller's own writes.
func slowSandboxWatches(lag time.Duration) func(*ctrl.Options) {
	return func(o *ctrl.Options) {
		o.NewCache = func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
			cfg := rest.CopyConfig(config)
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &slowWatchTransport{next: rt, lag: lag} })
			// The manager hands the cache its own HTTP client, which would bypass the wrapper.
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				return nil, err
			}
			opts.HTTPClient = hc
			return cache.New(cfg, opts)
		}
	}
}

type slowWatchTransport struct {
	next http.RoundTripper
	lag  time.Duration
}

func (t *slowWatchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.URL.Query().Get("watch") != "true" || !strings.HasSuffix(req.URL.Path, "/sandboxes") {
		return resp, err
	}
	resp.Body = newDelayedBody(resp.Body, t.lag)
	return resp, nil
}

// delayedBody hands out what it reads from src lag after it was read: a line with constant
// latency, whatever the rate.
type delayedBody struct {
	src       io.ReadCloser
	lag       time.Duration
	chunks    chan chunk
	done      chan struct{}
	closeOnce sync.Once
	cur       []byte
	err       error
}

type chunk struct {
	data []byte
	at   time.Time
	err  error
}

func newDelayedBody(src io.ReadCloser, lag time.Duration) *delayedBody {
	b := &delayedBody{src: src, lag: lag, chunks: make(chan chunk, 4096), done: make(chan struct{})}
	go b.pump()
	return b
}

func (b *delayedBody) pump() {
	for {
		buf := make([]byte, 32*1024)
		n, err := b.src.Read(buf)
		select {
		case b.chunks <- chunk{data: buf[:n], at: time.Now().Add(b.lag), err: err}:
		case <-b.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (b *delayedBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		select {
		case c := <-b.chunks:
			select {
			case <-time.After(time.Until(c.at)):
			case <-b.done:
				return 0, io.EOF
			}
			b.cur, b.err = c.data, c.err
		case <-b.done:
			return 0, io.EOF
		}
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (b *delayedBody) Close() error {
	b.closeOnce.Do(func() { close(b.done) })
	return b.src.Close()
}
