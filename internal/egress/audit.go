package egress

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Modes of a connection in the audit log and metrics.
const (
	modeTunnel    = "tunnel"    // CONNECT passed through: the proxy saw the name, not the content
	modeInspected = "inspected" // CONNECT terminated to add credentials: audited per request
	modeHTTP      = "http"      // plain HTTP request
)

type metrics struct {
	connections *prometheus.CounterVec
	bytes       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_egress_connections_total",
			Help: "Connections (tunnel) and requests (inspected, http) from sandboxes, by verdict (allowed, denied) and mode."},
			[]string{"verdict", "mode"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_egress_bytes_total",
			Help: "Bytes through the egress proxy, by direction (up: from sandboxes, down: to them) and mode."},
			[]string{"direction", "mode"}),
	}
	if reg != nil {
		reg.MustRegister(m.connections, m.bytes)
	}
	return m
}

// audit writes one audit line and counts it: the sandbox, destination, verdict and bytes.
func (p *Proxy) audit(st *connState, mode string, addr *netip.Addr, up, down int64, d time.Duration, extra ...slog.Attr) {
	verdict := "denied"
	if st.verdict.Allowed {
		verdict = "allowed"
	}
	sandbox := ""
	if st.sb != nil {
		sandbox = st.sb.Name
	}
	attrs := []slog.Attr{slog.String("sandbox", sandbox), slog.String("source", st.src), slog.String("domain", st.host),
		slog.Int("port", st.port), slog.String("verdict", verdict), slog.String("reason", st.verdict.Reason), slog.String("mode", mode)}
	if addr != nil {
		attrs = append(attrs, slog.String("address", addr.String()))
	}
	if st.verdict.Allowed {
		attrs = append(attrs, slog.Int64("bytesUp", up), slog.Int64("bytesDown", down), slog.Float64("durationSeconds", d.Seconds()))
	}
	attrs = append(attrs, extra...)
	p.cfg.Log.LogAttrs(context.Background(), slog.LevelInfo, "Egress", attrs...)
	p.metrics.connections.WithLabelValues(verdict, mode).Inc()
	p.metrics.bytes.WithLabelValues("up", mode).Add(float64(up))
	p.metrics.bytes.WithLabelValues("down", mode).Add(float64(down))
}

// countingConn counts a tunnel's bytes and reports them once, when it is closed.
type countingConn struct {
	net.Conn
	up, down atomic.Int64
	start    time.Time
	once     sync.Once
	done     func(up, down int64, d time.Duration)
}

func newCountingConn(c net.Conn, done func(up, down int64, d time.Duration)) *countingConn {
	return &countingConn{Conn: c, start: time.Now(), done: done}
}

// Read is what the destination sent (down to the sandbox).
func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.down.Add(int64(n))
	return n, err
}

// Write is what the sandbox sent (up).
func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.up.Add(int64(n))
	return n, err
}

func (c *countingConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.done(c.up.Load(), c.down.Load(), time.Since(c.start)) })
	return err
}

// CloseWrite and CloseRead keep half-close working for the tunnel's copy loop.
func (c *countingConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return nil
}

func (c *countingConn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return nil
}

// countingBody counts a response body and reports once, at EOF or close.
type countingBody struct {
	io.ReadCloser
	n    int64
	once sync.Once
	done func(int64)
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.once.Do(func() { b.done(b.n) })
	}
	return n, err
}

func (b *countingBody) Close() error {
	b.once.Do(func() { b.done(b.n) })
	return b.ReadCloser.Close()
}
