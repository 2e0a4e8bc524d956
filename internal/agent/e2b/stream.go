package e2b

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// KeepaliveHeader is the request header in which E2B's SDKs ask for keepalive events on a server
// stream, as a number of seconds.
const KeepaliveHeader = "Keepalive-Ping-Interval"

// minKeepalive bounds how often keepalives are sent, whatever a client asks for;
// DefaultKeepalive is the interval when it asks for none, as envd's.
const (
	minKeepalive     = time.Second
	DefaultKeepalive = 90 * time.Second
)

// sender serializes the messages of one server stream and sends a keepalive whenever the stream
// was quiet for the interval the client asked for in KeepaliveHeader (DefaultKeepalive when it
// gives none), so proxies and the SDK's own idle timers keep it open while a command prints nothing.
type sender[T any] struct {
	mu       sync.Mutex
	sendFn   func(T) error
	last     time.Time
	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
}

// newSender returns a sender over send; keepalive makes a keepalive message. Call stop when the
// stream ends.
func newSender[T any](ctx context.Context, h http.Header, send func(T) error, keepalive func() T) *sender[T] {
	s := &sender[T]{sendFn: send, last: time.Now(), done: make(chan struct{})}
	s.wg.Add(1)
	go s.keepalive(ctx, keepaliveInterval(h), keepalive)
	return s
}

// keepaliveInterval is the interval the client asked for, or DefaultKeepalive.
func keepaliveInterval(h http.Header) time.Duration {
	secs, err := strconv.ParseInt(h.Get(KeepaliveHeader), 10, 32)
	if err != nil || secs <= 0 {
		return DefaultKeepalive
	}
	return max(time.Duration(secs)*time.Second, minKeepalive)
}

func (s *sender[T]) send(msg T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = time.Now()
	return s.sendFn(msg)
}

func (s *sender[T]) keepalive(ctx context.Context, every time.Duration, msg func() T) {
	defer s.wg.Done()
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		var err error
		if time.Since(s.last) >= every {
			s.last = time.Now()
			err = s.sendFn(msg())
		}
		s.mu.Unlock()
		if err != nil {
			return // the stream is gone; the handler sees it on its next send
		}
	}
}

// stop ends the keepalives and waits for the last one, so nothing is sent after the handler
// returned.
func (s *sender[T]) stop() {
	s.stopOnce.Do(func() { close(s.done) })
	s.wg.Wait()
}
