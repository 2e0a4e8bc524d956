package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
	"github.com/prometheus/client_golang/prometheus"
)

// Sandbox is what the proxy knows of one sandbox.
type Sandbox struct {
	// Name is "namespace/name", for the audit log and messages.
	Name   string
	Policy *Policy
	// CA signs for the Policy's credential domains; nil when it has none.
	CA *CA
}

// Config configures a Proxy.
type Config struct {
	// Identify returns the sandbox whose Pod has the address src (canonical: CanonicalAddr), or
	// why src is none, which the proxy tells the client it refuses.
	Identify func(src netip.Addr) (*Sandbox, error)
	// Resolve looks up a name; default the system resolver. The proxy dials only what it
	// resolved itself.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Blocked are the ranges neither an IP literal nor a resolved name may be in unless the
	// policy's AllowCIDRs open them (Policy.AllowsAddress); default BlockedRanges.
	Blocked []netip.Prefix
	// UpstreamRoots verify the servers of inspected (credential) domains; nil: the system's.
	UpstreamRoots *x509.CertPool
	// DialTimeout bounds a connection to a destination; default 10s.
	DialTimeout time.Duration
	// Log receives the audit lines ("Egress") and the proxy's own messages.
	Log *slog.Logger
	// Registerer gets the kubox_egress_* metrics; nil: not registered.
	Registerer prometheus.Registerer
}

// UnknownSource is Identify's answer for a source that is no sandbox with an egress policy.
func UnknownSource(src netip.Addr) error {
	return fmt.Errorf("the source %s is not a sandbox with an egress policy", src)
}

// Proxy is the egress proxy; it is an http.Handler to serve as an HTTP proxy.
type Proxy struct {
	cfg     Config
	gp      *goproxy.ProxyHttpServer
	metrics *metrics
	// tunnels hands a passed-through CONNECT's decision to its dial.
	tunnels sync.Map // *http.Request -> *connState
}

// connState is a decision, followed from a CONNECT into the requests inspected inside it.
type connState struct {
	sb      *Sandbox
	src     string
	host    string
	port    int
	verdict Verdict
	// addrs are what host resolved to when it was decided: the proxy dials only these, so a
	// second DNS answer (rebinding) cannot move an allowed connection inward.
	addrs []netip.Addr
}

type ctxKey struct{}

// New returns a Proxy.
func New(cfg Config) *Proxy {
	if cfg.Resolve == nil {
		cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.Blocked == nil {
		cfg.Blocked = BlockedRanges
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{cfg: cfg, metrics: newMetrics(cfg.Registerer)}
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = goproxyLog{cfg.Log}
	gp.Tr = &http.Transport{
		DialContext:         p.dialDecided,
		TLSClientConfig:     &tls.Config{RootCAs: cfg.UpstreamRoots, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	gp.ConnectDialWithReq = p.dialTunnel
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "kubox egress is an HTTP proxy: send absolute URLs or CONNECT (set HTTP_PROXY/HTTPS_PROXY)", http.StatusBadRequest)
	})
	gp.OnRequest().HandleConnectFunc(p.onConnect)
	gp.OnRequest().DoFunc(p.onRequest)
	gp.OnResponse().DoFunc(p.onResponse)
	p.gp = gp
	return p
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.gp.ServeHTTP(w, r) }

// decide identifies the sandbox at remoteAddr and decides on host:port, resolving a name to the
// addresses it may dial. The error is the refusal, worded for the client.
func (p *Proxy) decide(ctx context.Context, remoteAddr, host string, port int) (*connState, error) {
	st := &connState{src: remoteAddr, host: host, port: port}
	src := addrOf(remoteAddr)
	sb, err := p.cfg.Identify(src)
	if err == nil && sb == nil {
		err = UnknownSource(src)
	}
	if err != nil {
		st.verdict.Reason = "unknown source: " + err.Error()
		return st, fmt.Errorf("kubox egress refused %s:%d: %w", host, port, err)
	}
	st.sb = sb
	refuse := func(reason string) (*connState, error) {
		st.verdict = Verdict{Reason: reason}
		return st, fmt.Errorf("kubox egress refused %s:%d for sandbox %s: %s", host, port, sb.Name, reason)
	}
	if st.verdict = sb.Policy.Decide(host, port, p.cfg.Blocked); !st.verdict.Allowed {
		return refuse(st.verdict.Reason)
	}
	if addr, ok := Literal(host); ok { // decided on as it is dialed
		st.addrs = []netip.Addr{addr}
		return st, nil
	}
	addrs, err := p.cfg.Resolve(ctx, host)
	if err != nil || len(addrs) == 0 {
		return refuse(fmt.Sprintf("%s does not resolve (%v)", host, err))
	}
	why := ""
	for _, a := range addrs {
		if ok, reason := sb.Policy.AllowsAddress(a, p.cfg.Blocked); ok {
			st.addrs = append(st.addrs, CanonicalAddr(a))
		} else {
			why = fmt.Sprintf("%s resolves to no address it may reach: %s", host, reason)
		}
	}
	if len(st.addrs) == 0 {
		return refuse(why)
	}
	return st, nil
}

// onConnect decides on a CONNECT: refuse with 403, pass through, or inspect (credentials).
func (p *Proxy) onConnect(hostport string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	host, port := splitHostPort(hostport, 443)
	st, err := p.decide(ctx.Req.Context(), ctx.Req.RemoteAddr, host, port)
	if err == nil && len(st.verdict.Credentials) > 0 && st.sb.CA == nil {
		st.verdict = Verdict{Reason: "the sandbox has credentials for the domain but no egress CA"}
		err = fmt.Errorf("kubox egress refused %s:%d for sandbox %s: %s", host, port, st.sb.Name, st.verdict.Reason)
	}
	if err != nil {
		p.audit(st, modeTunnel, nil, 0, 0, 0)
		ctx.Resp = goproxy.NewResponse(ctx.Req, goproxy.ContentTypeText, http.StatusForbidden, err.Error()+"\n")
		return goproxy.RejectConnect, hostport
	}
	ctx.UserData = st
	if len(st.verdict.Credentials) == 0 {
		p.tunnels.Store(ctx.Req, st)
		return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, hostport
	}
	ca := st.sb.CA
	return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: func(string, *goproxy.ProxyCtx) (*tls.Config, error) {
		leaf, err := ca.Leaf(host)
		if err != nil {
			return nil, err
		}
		return &tls.Config{Certificates: []tls.Certificate{*leaf}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}, nil
	}}, hostport
}

// dialTunnel dials a passed-through CONNECT at the addresses it was decided on; the tunnel is
// audited when it closes.
func (p *Proxy) dialTunnel(req *http.Request, network, _ string) (net.Conn, error) {
	v, ok := p.tunnels.LoadAndDelete(req)
	if !ok {
		return nil, errors.New("kubox egress: a CONNECT without a decision")
	}
	st := v.(*connState)
	c, addr, err := p.dialAny(req.Context(), network, st.addrs, st.port)
	if err != nil {
		p.audit(&connState{sb: st.sb, src: st.src, host: st.host, port: st.port, verdict: Verdict{Reason: "dial failed: " + err.Error()}},
			modeTunnel, nil, 0, 0, 0)
		return nil, err
	}
	return newCountingConn(c, func(up, down int64, d time.Duration) { p.audit(st, modeTunnel, &addr, up, down, d) }), nil
}

// onRequest decides on a plain HTTP request, and checks and adds credentials to a request
// inside an inspected CONNECT.
func (p *Proxy) onRequest(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	if st, ok := ctx.UserData.(*connState); ok { // inside an inspected CONNECT
		host, port := splitHostPort(req.URL.Host, 443)
		if canonical(host) != canonical(st.host) || port != st.port {
			msg := fmt.Sprintf("kubox egress refused a request for %s inside the connection to %s:%d (sandbox %s): one connection, one host",
				req.URL.Host, st.host, st.port, st.sb.Name)
			return req, goproxy.NewResponse(req, goproxy.ContentTypeText, http.StatusMisdirectedRequest, msg+"\n")
		}
		for _, c := range st.verdict.Credentials {
			req.Header.Set(c.Header, c.Value)
		}
		return req.WithContext(context.WithValue(req.Context(), ctxKey{}, st)), nil
	}
	host, port := splitHostPort(req.URL.Host, 80)
	st, err := p.decide(req.Context(), req.RemoteAddr, host, port)
	if err == nil && len(st.verdict.Credentials) > 0 {
		st.verdict = Verdict{Reason: "its credentials are sent only over HTTPS; use https://"}
		err = fmt.Errorf("kubox egress refused http://%s for sandbox %s: %s", req.URL.Host, st.sb.Name, st.verdict.Reason)
	}
	if err != nil {
		p.audit(st, modeHTTP, nil, 0, 0, 0)
		return req, goproxy.NewResponse(req, goproxy.ContentTypeText, http.StatusForbidden, err.Error()+"\n")
	}
	ctx.UserData = st
	return req.WithContext(context.WithValue(req.Context(), ctxKey{}, st)), nil
}

// onResponse audits an inspected or plain HTTP request when its response body is done.
func (p *Proxy) onResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	st, ok := ctx.UserData.(*connState)
	if !ok || resp == nil || ctx.Req == nil {
		return resp
	}
	mode := modeHTTP
	if len(st.verdict.Credentials) > 0 {
		mode = modeInspected
	}
	up := max(ctx.Req.ContentLength, 0)
	start := time.Now()
	resp.Body = &countingBody{ReadCloser: resp.Body, done: func(down int64) {
		p.audit(st, mode, nil, up, down, time.Since(start), slog.String("method", ctx.Req.Method), slog.Int("status", resp.StatusCode))
	}}
	return resp
}

// dialDecided is the transport's dialer: it dials the addresses of the request's decision.
func (p *Proxy) dialDecided(ctx context.Context, network, addr string) (net.Conn, error) {
	st, ok := ctx.Value(ctxKey{}).(*connState)
	if !ok {
		return nil, errors.New("kubox egress: a request without a decision")
	}
	if host, _ := splitHostPort(addr, 0); canonical(host) != canonical(st.host) {
		return nil, fmt.Errorf("kubox egress: a dial of %s for a decision on %s", addr, st.host)
	}
	c, _, err := p.dialAny(ctx, network, st.addrs, st.port)
	return c, err
}

// dialAny dials the addresses in order until one answers.
func (p *Proxy) dialAny(ctx context.Context, network string, addrs []netip.Addr, port int) (net.Conn, netip.Addr, error) {
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, a, nil
		}
		errs = append(errs, err)
	}
	return nil, netip.Addr{}, errors.Join(errs...)
}

// splitHostPort splits host[:port], with def when there is no port; an IPv6 literal's
// brackets go either way.
func splitHostPort(hostport string, def int) (string, int) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), def
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return host, def
	}
	return host, port
}

// addrOf is the address of a "host:port" remote address; the zero Addr when unreadable.
func addrOf(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	return CanonicalAddr(ap.Addr())
}

// goproxyLog sends goproxy's own messages to the proxy's log, at debug level: what matters to
// an operator is in the audit lines.
type goproxyLog struct{ log *slog.Logger }

func (l goproxyLog) Printf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
