package wake

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// t0 is the fake clock's start, on a whole second.
var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeWrites records the tracker's writes; fail makes them fail, block holds them until closed.
type fakeWrites struct {
	mu    sync.Mutex
	times []time.Time
	fail  bool
	block chan struct{}
}

func (f *fakeWrites) write(_ context.Context, _, _ string, at time.Time) error {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.times, at)
	if f.fail {
		return errors.New("the API server is down")
	}
	return nil
}

func (f *fakeWrites) written() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.times...)
}

// idleSandbox is a Sandbox with an idle policy of suspendAfter and, when not zero, a
// last-activity annotation of lastActivity.
func idleSandbox(suspendAfter time.Duration, lastActivity time.Time) *sandboxv1beta1.Sandbox {
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box", UID: types.UID("uid-1")}}
	sb.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: suspendAfter}}
	if !lastActivity.IsZero() {
		sb.Annotations = map[string]string{sandboxv1beta1.LastActivityAnnotation: FormatActivity(lastActivity)}
	}
	return sb
}

type trackerFixture struct {
	tracker *Tracker
	clock   *fakeClock
	writes  *fakeWrites
	bg      *Background
	metric  *prometheus.CounterVec
	cached  *sandboxv1beta1.Sandbox
}

func newTrackerFixture(t *testing.T) *trackerFixture {
	f := &trackerFixture{clock: &fakeClock{t: t0}, writes: &fakeWrites{}, bg: NewBackground(),
		metric: metrics.New().ActivityWrites}
	f.tracker = NewTracker(TrackerDeps{Write: f.writes.write, Now: f.clock.now, Writes: f.metric, BG: f.bg,
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Lookup: func(context.Context, string, string) *sandboxv1beta1.Sandbox { return f.cached }})
	t.Cleanup(f.bg.Stop)
	return f
}

// settle waits for the writes in flight.
func (f *trackerFixture) settle() {
	f.bg.wg.Wait()
}

func (f *trackerFixture) request(sb *sandboxv1beta1.Sandbox) {
	f.tracker.Begin(sb)()
	f.settle()
}

func TestActivityWriteRule(t *testing.T) {
	cases := map[string]struct {
		suspendAfter time.Duration
		// age of the cached annotation; 0: none
		age       time.Duration
		wantWrite bool
	}{
		"no annotation yet":                       {suspendAfter: 10 * time.Minute, wantWrite: true},
		"annotation fresh":                        {suspendAfter: 10 * time.Minute, age: time.Minute},
		"annotation just under half suspendAfter": {suspendAfter: 10 * time.Minute, age: 5*time.Minute - time.Second},
		"annotation older than half suspendAfter": {suspendAfter: 10 * time.Minute, age: 5*time.Minute + time.Second, wantWrite: true},
		"short suspendAfter: 15s floor, under":    {suspendAfter: 30 * time.Second, age: 14 * time.Second},
		"short suspendAfter: 15s floor, over":     {suspendAfter: 30 * time.Second, age: 16 * time.Second, wantWrite: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newTrackerFixture(t)
			var seen time.Time
			if tc.age > 0 {
				seen = t0.Add(-tc.age)
			}
			f.request(idleSandbox(tc.suspendAfter, seen))
			var want []time.Time
			if tc.wantWrite {
				want = []time.Time{t0}
			}
			if diff := cmp.Diff(want, f.writes.written()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestActivityManyRequestsOneWrite(t *testing.T) {
	f := newTrackerFixture(t)
	sb := idleSandbox(10*time.Minute, time.Time{}) // the cache never catches up in this test
	for range 50 {
		f.request(sb)
		f.clock.advance(time.Second)
	}
	if diff := cmp.Diff([]time.Time{t0}, f.writes.written()); diff != "" {
		t.Errorf("writes for 50 requests in 50s (-want +got):\n%s", diff)
	}
	f.clock.advance(5 * time.Minute)
	f.request(sb)
	if got := len(f.writes.written()); got != 2 {
		t.Errorf("a request more than half of suspendAfter after the last write made %d writes in all, want 2", got)
	}
	if got := testutil.ToFloat64(f.metric.WithLabelValues(metrics.ActivityWriteSuccess)); got != 2 {
		t.Errorf("kubox_router_activity_writes_total{result=success} is %v, want 2", got)
	}
}

func TestActivityOneWriteInFlight(t *testing.T) {
	f := newTrackerFixture(t)
	f.writes.block = make(chan struct{})
	sb := idleSandbox(time.Minute, time.Time{})
	for range 5 {
		f.tracker.Begin(sb)()
		f.clock.advance(time.Minute) // each request would be due a write of its own
	}
	close(f.writes.block)
	f.settle()
	if got := len(f.writes.written()); got != 1 {
		t.Errorf("%d writes while the first was in flight, want 1", got)
	}
}

func TestActivityFailedWriteIsNotRetriedHot(t *testing.T) {
	f := newTrackerFixture(t)
	f.writes.fail = true
	sb := idleSandbox(time.Minute, time.Time{})
	for range 10 {
		f.request(sb)
		f.clock.advance(time.Second)
	}
	if got := len(f.writes.written()); got != 1 {
		t.Fatalf("%d write attempts in the 10s after a failure, want 1", got)
	}
	if got := testutil.ToFloat64(f.metric.WithLabelValues(metrics.ActivityWriteError)); got != 1 {
		t.Errorf("kubox_router_activity_writes_total{result=error} is %v, want 1", got)
	}
	f.clock.advance(activityRetry)
	f.writes.fail = false
	f.request(sb)
	if got := len(f.writes.written()); got != 2 {
		t.Errorf("%d write attempts once the retry delay passed, want 2", got)
	}
}

func TestActivityOpenRequestKeepsWriting(t *testing.T) {
	f := newTrackerFixture(t)
	sb := idleSandbox(time.Minute, time.Time{})
	f.cached = sb
	end := f.tracker.Begin(sb) // a WebSocket that stays open
	f.settle()
	f.clock.advance(20 * time.Second)
	f.tracker.refresh(context.Background())
	f.settle()
	if got := len(f.writes.written()); got != 1 {
		t.Fatalf("%d writes 20s into an open request (window 30s), want 1", got)
	}
	f.clock.advance(20 * time.Second)
	f.tracker.refresh(context.Background())
	f.settle()
	if diff := cmp.Diff([]time.Time{t0, t0.Add(40 * time.Second)}, f.writes.written()); diff != "" {
		t.Fatalf("writes of an open request (-want +got):\n%s", diff)
	}
	end()
	f.settle()
	f.clock.advance(time.Minute)
	f.tracker.refresh(context.Background())
	if got := f.tracker.tracked(); got != 0 {
		t.Errorf("the tracker remembers %d sandboxes a window after their last request ended, want 0", got)
	}
	if got := len(f.writes.written()); got != 2 {
		t.Errorf("%d writes after the request ended and nothing came, want 2", got)
	}
}

func TestActivityWindow(t *testing.T) {
	for suspendAfter, want := range map[time.Duration]time.Duration{
		30 * time.Second: 15 * time.Second,
		20 * time.Second: 15 * time.Second, // below the API's minimum: still the floor
		10 * time.Minute: 5 * time.Minute,
	} {
		p := &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: suspendAfter}}
		if got := activityWindow(p); got != want {
			t.Errorf("activityWindow(suspendAfter %s) = %s, want %s", suspendAfter, got, want)
		}
	}
}

// BenchmarkActivityBegin is what the tracker adds to a request for a sandbox with an idle
// policy whose annotation is fresh (no write).
func BenchmarkActivityBegin(b *testing.B) {
	f := &trackerFixture{clock: &fakeClock{t: t0}, writes: &fakeWrites{}, bg: NewBackground(), metric: metrics.New().ActivityWrites}
	f.tracker = NewTracker(TrackerDeps{Write: f.writes.write, Now: f.clock.now, Writes: f.metric, BG: f.bg,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer f.bg.Stop()
	sb := idleSandbox(10*time.Minute, t0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f.tracker.Begin(sb)()
		}
	})
}
