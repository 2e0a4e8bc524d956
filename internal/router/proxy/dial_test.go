package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// closedAddr is a loopback address nothing listens on: a listener's, closed.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestDialWithRetries(t *testing.T) {
	for name, tc := range map[string]struct {
		maxRetries  int
		cancelFirst bool
		wantRetries float64
		wantRefused bool
	}{
		"no retries: one dial":            {maxRetries: 0, wantRetries: 0, wantRefused: true},
		"three retries: four dials":       {maxRetries: 3, wantRetries: 3, wantRefused: true},
		"a request already gone: no dial": {maxRetries: 3, cancelFirst: true, wantRetries: 0},
	} {
		t.Run(name, func(t *testing.T) {
			m := metrics.New()
			p := New(Config{MaxRetries: tc.maxRetries, RetryDelay: time.Millisecond}, m, slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks{})
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancelFirst {
				cancel()
			}
			defer cancel()
			c, err := p.dialWithRetries(ctx, "tcp", closedAddr(t))
			if c != nil || err == nil {
				t.Fatalf("dialWithRetries to a closed port = %v, %v; want no connection and an error", c, err)
			}
			if refused := errors.Is(err, syscall.ECONNREFUSED); refused != tc.wantRefused {
				t.Errorf("dialWithRetries error = %v; want connection refused: %v", err, tc.wantRefused)
			}
			if got := testutil.ToFloat64(m.UpstreamRetries); got != tc.wantRetries {
				t.Errorf("upstream retries = %v; want %v", got, tc.wantRetries)
			}
		})
	}
}
