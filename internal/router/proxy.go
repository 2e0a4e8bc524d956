package router

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// upstream holds the two transports to sandboxes: HTTP/1.1 (also for WebSocket upgrades) and
// HTTP/2 without TLS (h2c, for gRPC), chosen by the protocol the client spoke to the router.
type upstream struct {
	h1, h2c *http.Transport
}

func (rt *Router) newUpstream() *upstream {
	newTransport := func() *http.Transport {
		return &http.Transport{
			DialContext:           rt.dialWithRetries,
			ResponseHeaderTimeout: rt.cfg.ProxyTimeout,
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
			MaxResponseHeaderBytes: rt.cfg.MaxResponseHeaderBytes,
			// What an h2c stream may make the router buffer of a response the client reads slowly.
			HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: streamWindow},
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
// retry cannot repeat a request) with exponential backoff.
func (rt *Router) dialWithRetries(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	delay := rt.cfg.UpstreamRetryDelay
	for attempt := 0; ; attempt++ {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil || attempt >= rt.cfg.UpstreamMaxRetries || ctx.Err() != nil {
			return c, err
		}
		rt.metrics.UpstreamRetries.Inc()
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, err
		}
		delay *= 2
	}
}

type targetKey struct{}

func (rt *Router) newProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        rt.rewrite,
		ModifyResponse: rt.modifyResponse,
		Transport:      rt.upstream,
		FlushInterval:  -1, // stream every write: process output, gRPC and Connect streams
		ErrorHandler:   rt.proxyError,
		// What ReverseProxy logs itself: a response body cut off mid-copy.
		ErrorLog: slog.NewLogLogger(rt.log.Handler(), slog.LevelWarn),
	}
}

// proxyTarget is what rewrite needs, carried in the request's context.
type proxyTarget struct {
	*target
	path, rawPath string
	keepHost      bool
	// pathBase is where the sandbox's "/" is on a path route ({prefix}/{ns}/{name}/{port}); "" otherwise.
	pathBase string
}

// rewrite addresses the request to the sandbox and removes what is the router's business:
// the client's credentials, the routing headers, the token cookie. The sandbox's agent token is
// added only for the agent's own ports. ReverseProxy has already removed hop-by-hop headers and
// any X-Forwarded-* the client sent; SetXForwarded sets them anew.
func (rt *Router) rewrite(pr *httputil.ProxyRequest) {
	t := pr.In.Context().Value(targetKey{}).(*proxyTarget)
	pr.SetURL(&url.URL{Scheme: "http", Host: t.addr})
	pr.Out.URL.Path, pr.Out.URL.RawPath = t.path, t.rawPath
	if t.keepHost {
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
	stripTokenCookie(h)
	if t.agentToken != "" {
		h.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+t.agentToken)
	}
}

// modifyResponse keeps a sandbox from setting the router's cookie, on every route: a cookie a
// sandbox sets for a parent domain would reach other sandboxes' preview hosts.
func (rt *Router) modifyResponse(res *http.Response) error {
	stripTokenSetCookie(res.Header)
	rt.modifyPathResponse(res)
	return nil
}

// isTokenCookieName reports whether a cookie name is the router's, in any casing and with the
// __Secure- and __Host- prefixes browsers give meaning to.
func isTokenCookieName(name string) bool {
	name = strings.TrimSpace(name)
	for _, p := range []string{"__Secure-", "__Host-"} {
		if len(name) > len(p) && strings.EqualFold(name[:len(p)], p) {
			name = name[len(p):]
		}
	}
	return strings.EqualFold(name, tokenCookie)
}

// stripTokenSetCookie removes every Set-Cookie (and the obsolete Set-Cookie2) that sets the
// router's cookie, and keeps the others.
func stripTokenSetCookie(h http.Header) {
	delete(h, "Set-Cookie2")
	values, ok := h["Set-Cookie"]
	if !ok {
		return
	}
	kept := values[:0:0]
	for _, v := range values {
		name, _, _ := strings.Cut(v, "=")
		if !isTokenCookieName(name) {
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
		stripTokenSetCookie(w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w cookieGuard) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// stripTokenCookie removes the kubox-token cookie and keeps the others.
func stripTokenCookie(h http.Header) {
	cookies := h.Values("Cookie")
	if len(cookies) == 0 {
		return
	}
	var kept []string
	for _, line := range cookies {
		for part := range strings.SplitSeq(line, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if !isTokenCookieName(name) && strings.TrimSpace(part) != "" {
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
func (rt *Router) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	t := r.Context().Value(targetKey{}).(*proxyTarget)
	info := infoFrom(r.Context())
	ns, name := t.sandbox.Namespace, t.sandbox.Name
	var maxBytes *http.MaxBytesError
	var opErr *net.OpError
	var reason string
	var herr *httpError
	switch {
	case errors.As(err, &maxBytes):
		herr = errorf(http.StatusRequestEntityTooLarge, "the request body is larger than the router's limit of %d bytes (--max-request-body-bytes)", maxBytes.Limit)
	case isHeaderTooLarge(err):
		reason = metrics.ReasonHeaderTooLarge
		herr = errorf(http.StatusBadGateway, "sandbox %s/%s answered with response headers larger than the router's limit of %d bytes "+
			"(--max-response-header-bytes); the app on port %s must send smaller headers (large cookies?), or raise the limit",
			ns, name, rt.cfg.MaxResponseHeaderBytes, t.port())
	case errors.Is(err, errTooManyInformational):
		reason = metrics.ReasonHeaderTooLarge
		herr = errorf(http.StatusBadGateway, "sandbox %s/%s sent %v before its response; the router passes at most %d", ns, name,
			errTooManyInformational, maxInformationalResponses)
	case errors.Is(r.Context().Err(), context.Canceled):
		info.err = "client went away"
		w.WriteHeader(499) // nginx's "client closed request": nobody reads it, the access log shows it
		return
	case errors.As(err, &opErr) && opErr.Op == "dial":
		reason = metrics.ReasonDial
		herr = errorf(http.StatusBadGateway, "could not connect to sandbox %s/%s at %s after %d attempts: %v; the sandbox's server may not be "+
			"listening on that port yet, or its Pod is gone", ns, name, t.addr, rt.cfg.UpstreamMaxRetries+1, opErr.Err)
	case isTimeout(err, r):
		reason = metrics.ReasonTimeout
		herr = errorf(http.StatusGatewayTimeout, "sandbox %s/%s did not answer in time (the router waits %s for response headers, "+
			"less when X-Sandbox-Timeout says so)", ns, name, rt.cfg.ProxyTimeout)
	default:
		reason = metrics.ReasonOther
		herr = errorf(http.StatusBadGateway, "the connection to sandbox %s/%s failed: %v", ns, name, err)
	}
	if reason != "" {
		rt.metrics.UpstreamErrors.WithLabelValues(ns, reason).Inc()
	}
	info.err = err.Error()
	writeError(w, herr)
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

func itoa(i int) string { return strconv.Itoa(i) }
