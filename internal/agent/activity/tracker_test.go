package activity

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// clock is a settable clock for Tracker.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

func TestTrackerCountsOpenRequestsAndTheLastEnd(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	tr := NewTracker(c.now)
	if last, open := tr.Snapshot(); !last.IsZero() || open != 0 {
		t.Fatalf("a new tracker reports %s, %d open", last, open)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	h := tr.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/kubox.agent.v1.ProcessService/StartProcess", nil))
		close(done)
	}()
	<-entered
	if last, open := tr.Snapshot(); open != 1 || !last.Equal(time.Unix(1000, 0)) {
		t.Errorf("during a stream: last %s, %d open; want its start and 1", last, open)
	}
	c.set(time.Unix(2000, 0))
	close(release)
	<-done
	if last, open := tr.Snapshot(); open != 0 || !last.Equal(time.Unix(2000, 0)) {
		t.Errorf("after the stream: last %s, %d open; want its end and 0", last, open)
	}
}

func TestTrackerIgnoresProbesAndTheActivityCheck(t *testing.T) {
	tr := NewTracker(nil)
	h := tr.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, p := range []string{"/", "/healthz", "/v1/health", agentv1connect.ActivityServiceGetActivityProcedure} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	if last, _ := tr.Snapshot(); !last.IsZero() {
		t.Fatalf("probes and GetActivity counted as activity (last %s)", last)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/list/", nil))
	if last, _ := tr.Snapshot(); last.IsZero() {
		t.Fatal("a python-runtime /list was not counted")
	}
}
