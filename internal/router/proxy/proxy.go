package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router/httperr"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// StreamWindow is the HTTP/2 flow-control window the router grants per stream, on both sides:
// to clients (request bodies the sandbox has not read yet) and to sandboxes over h2c (response
// bodies the client has not read yet). It is all an h2 stream can make the router buffer; Go's
// defaults (1 MiB to clients, 4 MiB to servers) would let one stream hold megabytes.
const StreamWindow = 128 << 10

// maxInformationalResponses bounds the 1xx responses (103 Early Hints, ...) a sandbox may send
// before its final response.
const maxInformationalResponses = 16

var errTooManyInformational = errors.New("more than 16 informational (1xx) responses")

// Config is the proxy's part of the router's configuration.
type Config struct {
	// ProxyTimeout bounds the wait for a sandbox's response headers.
	ProxyTimeout time.Duration
	// MaxResponseHeaderBytes bounds the response headers a sandbox may send (502 beyond).
	MaxResponseHeaderBytes int64
	// MaxRetries and RetryDelay: a failed dial is retried this many times, waiting RetryDelay,
	// then twice as long each time.
	MaxRetries int
	RetryDelay time.Duration
}

// Target is where one request goes, as the router resolved it.
type Target struct {
	// Namespace and Name are the sandbox's, for messages and metrics.
	Namespace, Name string
	// Addr is the sandbox's pod IP and port.
	Addr string
	// Path and RawPath are forwarded (RawPath empty when Path needs no escaping).
	Path, RawPath string
	// KeepHost forwards the client's Host (preview hosts).
	KeepHost bool
	// AgentToken, when not empty, is sent as the request's Authorization: the port is the
	// sandbox's agent's.
	AgentToken string
	// PathBase is where the sandbox's "/" is on a path route ({prefix}/{ns}/{name}/{port}); ""
	// otherwise.
	PathBase string
}

// port is the port of the target's address.
func (t *Target) port() string {
	_, p, _ := net.SplitHostPort(t.Addr)
	return p
}

// Hooks are what the router adds to the proxy.
type Hooks struct {
	// ModifyResponse edits a sandbox's response after the proxy's own edits (path routes'
	// confinement); nil: none.
	ModifyResponse func(res *http.Response, t *Target)
	// Failed records why a request got no answer from its sandbox, for the access log.
	Failed func(r *http.Request, err string)
}

// Proxy forwards requests to sandboxes.
type Proxy struct {
	cfg      Config
	metrics  *metrics.Metrics
	hooks    Hooks
	upstream *upstream
	rp       *httputil.ReverseProxy
}

// New returns the proxy of cfg; it counts upstream retries and errors in m and logs to log.
func New(cfg Config, m *metrics.Metrics, log *slog.Logger, hooks Hooks) *Proxy {
	if hooks.Failed == nil {
		hooks.Failed = func(*http.Request, string) {}
	}
	p := &Proxy{cfg: cfg, metrics: m, hooks: hooks}
	p.upstream = p.newUpstream()
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		ModifyResponse: p.modifyResponse,
		Transport:      p.upstream,
		FlushInterval:  -1, // stream every write: process output, gRPC and Connect streams
		ErrorHandler:   p.proxyError,
		// What ReverseProxy logs itself: a response body cut off mid-copy.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return p
}

// ServeHTTP forwards r to t. It returns when the response (a stream, an upgraded connection)
// is over.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request, t *Target) {
	// A sandbox may answer before it has read the whole request (a code interpreter streaming
	// output while the client's body is still on its way, a bidirectional Connect stream over
	// HTTP/1.1). By default Go's HTTP/1 server makes the request body unreadable once the
	// response headers are written, and the transport, still forwarding that body, then closes
	// the sandbox's connection and cuts the response off mid-stream. Full duplex keeps the body
	// readable; HTTP/2 is full duplex already. Every writer the router wraps w in unwraps, so
	// the only error, http.ErrNotSupported, cannot happen on HTTP/1.
	_ = http.NewResponseController(w).EnableFullDuplex()
	// ReverseProxy passes 1xx responses on as they come (its trace hook runs before this one);
	// a sandbox sending them without end would keep the request, and the garbage, going.
	informational := 0
	ctx := httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{Got1xxResponse: func(int, textproto.MIMEHeader) error {
		if informational++; informational > maxInformationalResponses {
			return errTooManyInformational
		}
		return nil
	}})
	p.rp.ServeHTTP(cookieGuard{w}, r.WithContext(context.WithValue(ctx, targetKey{}, t)))
}

// CloseIdle closes the idle connections to sandboxes.
func (p *Proxy) CloseIdle() { p.upstream.closeIdle() }

// upstream holds the two transports to sandboxes: HTTP/1.1 (also for WebSocket upgrades) and
// HTTP/2 without TLS (h2c, for gRPC), chosen by the protocol the client spoke to the router.
type upstream struct {
	h1, h2c *http.Transport
}

func (p *Proxy) newUpstream() *upstream {
	newTransport := func() *http.Transport {
		return &http.Transport{
			DialContext:           p.dialWithRetries,
			ResponseHeaderTimeout: p.cfg.ProxyTimeout,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			// Bodies are passed through as they are; the agent compresses nothing itself.
			DisableCompression: true,
			// A sandbox's response headers are bounded: for HTTP/1.1 the header block (1xx
			// responses included: each is passed to the client and the limit starts again, and
			// trailers stay within the connection's 4 KiB read buffer); for h2c this is also the
			// MAX_HEADER_LIST_SIZE the router advertises and enforces, trailers included.
			MaxResponseHeaderBytes: p.cfg.MaxResponseHeaderBytes,
			// What an h2c stream may make the router buffer of a response the client reads slowly.
			HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: StreamWindow},
		}
	}
	u := &upstream{h1: newTransport(), h2c: newTransport()}
	u.h1.Protocols = new(http.Protocols)
	u.h1.Protocols.SetHTTP1(true)
	u.h2c.Protocols = new(http.Protocols)
	u.h2c.Protocols.SetUnencryptedHTTP2(true)
	return u
}

// RoundTrip sends HTTP/2 requests over h2c and everything else (upgrades too) over HTTP/1.1.
func (u *upstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ProtoMajor == 2 && r.Header.Get("Upgrade") == "" {
		res, err := u.h2c.RoundTrip(r)
		if err == nil {
			// Once the response headers are in, Go's HTTP/2 transport no longer watches the
			// request's context: a request body blocked on the sandbox's flow control and a
			// response body waiting for data would outlive the client, and hold their slot of
			// --max-inflight-requests, forever. Closing the body when the client goes aborts
			// the stream.
			res.Body = closeOnDone(r.Context(), res.Body)
		}
		return res, err
	}
	return u.h1.RoundTrip(r)
}

// closeOnDone closes body when ctx ends.
func closeOnDone(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	stop := context.AfterFunc(ctx, func() { _ = body.Close() })
	return &doneBody{ReadCloser: body, stop: stop}
}

type doneBody struct {
	io.ReadCloser
	stop func() bool
}

func (b *doneBody) Close() error {
	b.stop()
	return b.ReadCloser.Close()
}

func (u *upstream) closeIdle() {
	u.h1.CloseIdleConnections()
	u.h2c.CloseIdleConnections()
}

// dialWithRetries dials a sandbox, retrying failed dials (only dials: nothing was sent yet, so a
// retry cannot repeat a request) MaxRetries times with exponential backoff from RetryDelay.
func (p *Proxy) dialWithRetries(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	var c net.Conn
	var err error
	backoff := wait.Backoff{Duration: p.cfg.RetryDelay, Factor: 2, Steps: p.cfg.MaxRetries + 1}
	attempt := 0
	werr := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if attempt > 0 {
			p.metrics.UpstreamRetries.Inc()
		}
		attempt++
		c, err = d.DialContext(ctx, network, addr)
		return err == nil, nil
	})
	if c == nil && err == nil { // ctx ended before the first dial
		err = werr
	}
	return c, err
}

type targetKey struct{}

// rewrite addresses the request to the sandbox and removes what is the router's business:
// the client's credentials, the routing headers, the token cookie. The sandbox's agent token is
// added only for the agent's own ports. ReverseProxy has already removed hop-by-hop headers and
// any X-Forwarded-* the client sent; SetXForwarded sets them anew.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	t := pr.In.Context().Value(targetKey{}).(*Target)
	pr.SetURL(&url.URL{Scheme: "http", Host: t.Addr})
	pr.Out.URL.Path, pr.Out.URL.RawPath = t.Path, t.RawPath
	if t.KeepHost {
		pr.Out.Host = pr.In.Host
	}
	pr.SetXForwarded()
	h := pr.Out.Header
	h.Del(contract.AuthorizationHeader)
	for k := range h {
		if strings.HasPrefix(k, contract.SandboxHeaderPrefix) {
			delete(h, k)
		}
	}
	StripTokenCookie(h)
	if t.AgentToken != "" {
		h.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+t.AgentToken)
	}
}

// modifyResponse keeps a sandbox from setting the router's cookie, on every route: a cookie a
// sandbox sets for a parent domain would reach other sandboxes' preview hosts.
func (p *Proxy) modifyResponse(res *http.Response) error {
	StripTokenSetCookie(res.Header)
	if p.hooks.ModifyResponse != nil {
		t, _ := res.Request.Context().Value(targetKey{}).(*Target)
		p.hooks.ModifyResponse(res, t)
	}
	return nil
}

// IsTokenCookieName reports whether a cookie name is the router's, in any casing and with the
// __Secure- and __Host- prefixes browsers give meaning to.
func IsTokenCookieName(name string) bool {
	name = strings.TrimSpace(name)
	for _, p := range []string{"__Secure-", "__Host-"} {
		if len(name) > len(p) && strings.EqualFold(name[:len(p)], p) {
			name = name[len(p):]
		}
	}
	return strings.EqualFold(name, contract.RouterTokenCookie)
}

// StripTokenSetCookie removes every Set-Cookie (and the obsolete Set-Cookie2) that sets the
// router's cookie, and keeps the others.
func StripTokenSetCookie(h http.Header) {
	delete(h, "Set-Cookie2")
	values, ok := h["Set-Cookie"]
	if !ok {
		return
	}
	kept := values[:0:0]
	for _, v := range values {
		name, _, _ := strings.Cut(v, "=")
		if !IsTokenCookieName(name) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		delete(h, "Set-Cookie")
		return
	}
	h["Set-Cookie"] = kept
}

// cookieGuard strips the router's cookie from 1xx responses, which ReverseProxy passes to the
// client as they come, before ModifyResponse sees anything.
type cookieGuard struct{ http.ResponseWriter }

func (w cookieGuard) WriteHeader(code int) {
	if code < 200 {
		StripTokenSetCookie(w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w cookieGuard) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// StripTokenCookie removes the kubox-token cookie and keeps the others.
func StripTokenCookie(h http.Header) {
	cookies := h.Values("Cookie")
	if len(cookies) == 0 {
		return
	}
	var kept []string
	for _, line := range cookies {
		for part := range strings.SplitSeq(line, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if !IsTokenCookieName(name) && strings.TrimSpace(part) != "" {
				kept = append(kept, strings.TrimSpace(part))
			}
		}
	}
	h.Del("Cookie")
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}

// proxyError answers a request the sandbox did not answer.
func (p *Proxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	t := r.Context().Value(targetKey{}).(*Target)
	ns, name := t.Namespace, t.Name
	var maxBytes *http.MaxBytesError
	var opErr *net.OpError
	var reason string
	var herr *httperr.Error
	switch {
	case errors.As(err, &maxBytes):
		herr = httperr.Errorf(http.StatusRequestEntityTooLarge, "the request body is larger than the router's limit of %d bytes (--max-request-body-bytes)", maxBytes.Limit)
	case isHeaderTooLarge(err):
		reason = metrics.ReasonHeaderTooLarge
		herr = httperr.Errorf(http.StatusBadGateway, "sandbox %s/%s answered with response headers larger than the router's limit of %d bytes "+
			"(--max-response-header-bytes); the app on port %s must send smaller headers (large cookies?), or raise the limit",
			ns, name, p.cfg.MaxResponseHeaderBytes, t.port())
	case errors.Is(err, errTooManyInformational):
		reason = metrics.ReasonHeaderTooLarge
		herr = httperr.Errorf(http.StatusBadGateway, "sandbox %s/%s sent %v before its response; the router passes at most %d", ns, name,
			errTooManyInformational, maxInformationalResponses)
	case errors.Is(r.Context().Err(), context.Canceled):
		p.hooks.Failed(r, "client went away")
		w.WriteHeader(httperr.StatusClientClosedRequest)
		return
	case errors.As(err, &opErr) && opErr.Op == "dial":
		reason = metrics.ReasonDial
		herr = httperr.Errorf(http.StatusBadGateway, "could not connect to sandbox %s/%s at %s after %d attempts: %v; the sandbox's server may not be "+
			"listening on that port yet, or its Pod is gone", ns, name, t.Addr, p.cfg.MaxRetries+1, opErr.Err)
	case isTimeout(err, r):
		reason = metrics.ReasonTimeout
		herr = httperr.Errorf(http.StatusGatewayTimeout, "sandbox %s/%s did not answer in time (the router waits %s for response headers, "+
			"less when X-Sandbox-Timeout says so)", ns, name, p.cfg.ProxyTimeout)
	default:
		reason = metrics.ReasonOther
		herr = httperr.Errorf(http.StatusBadGateway, "the connection to sandbox %s/%s failed: %v", ns, name, err)
	}
	if reason != "" {
		p.metrics.UpstreamErrors.WithLabelValues(ns, reason).Inc()
	}
	p.hooks.Failed(r, err.Error())
	httperr.Write(w, herr)
}

// isHeaderTooLarge recognises the transports' errors for response headers over the limit: net/http
// exports no error values for them.
func isHeaderTooLarge(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "server response headers exceeded") || // HTTP/1.1
		strings.Contains(msg, "header list larger than advertised limit") || // h2c, final response
		strings.Contains(msg, "header list too large") || // h2c, 1xx responses
		strings.Contains(msg, "COMPRESSION_ERROR") // h2c: a header field longer than the limit fails HPACK decoding
}

func isTimeout(err error, r *http.Request) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(r.Context().Err(), context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) || strings.Contains(err.Error(), "timeout awaiting response headers")
}
