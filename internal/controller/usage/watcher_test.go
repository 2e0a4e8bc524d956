package usage

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/kubox-dev/kubox/internal/usage"
)

type memSink struct {
	mu   sync.Mutex
	recs []usage.Record
}

func (*memSink) Name() string { return "mem" }
func (s *memSink) Write(_ context.Context, r []usage.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r...)
	return nil
}
func (*memSink) Close(context.Context) error { return nil }

func TestWatcherWritesRecordOnDelete(t *testing.T) {
	cases := map[string]struct {
		deleted any
	}{
		"the deleted object":        {deleted: sandbox("team-a", "s", "u1", "alice", true, false)},
		"a tombstone of the object": {deleted: cache.DeletedFinalStateUnknown{Key: "team-a/s", Obj: sandbox("team-a", "s", "u1", "alice", true, false)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sink := &memSink{}
			clock := at(0)
			w := NewWatcher(NewTracker(Config{PrincipalLabel: "example.com/user"}), nil, sink)
			w.now = func() time.Time { return clock }
			w.OnAdd(sandbox("team-a", "s", "u1", "alice", true, false), false)
			clock = at(30)
			w.OnDelete(tc.deleted)
			w.drain(t.Context())
			if len(sink.recs) != 1 || sink.recs[0].RunningSeconds != 30 || sink.recs[0].Principal != "alice" {
				t.Errorf("records %+v, want one with 30 running seconds for alice", sink.recs)
			}
		})
	}
}

// flakySink fails its first `failures` writes, then stores the records; on write number
// cancelAt (0: never) it calls cancel.
type flakySink struct {
	memSink
	failures, calls, cancelAt int
	cancel                    context.CancelFunc
}

func (s *flakySink) Write(ctx context.Context, r []usage.Record) error {
	s.calls++
	if s.calls == s.cancelAt {
		s.cancel()
	}
	if s.calls <= s.failures {
		return errors.New("store unavailable")
	}
	return s.memSink.Write(ctx, r)
}

// recordDelays makes w wait nothing between tries while recording the waits its real backoff
// asked for.
func recordDelays(w *Watcher) *[]time.Duration {
	var asked []time.Duration
	w.retryDelays = func() wait.DelayFunc {
		backoff := retryBackoff.DelayFunc()
		return func() time.Duration {
			asked = append(asked, backoff())
			return time.Microsecond
		}
	}
	return &asked
}

func TestWatcherRetriesFailedSinkWithCappedBackoff(t *testing.T) {
	flaky, next := &flakySink{failures: 9}, &memSink{}
	w := NewWatcher(NewTracker(Config{}), nil, flaky, next)
	asked := recordDelays(w)

	w.write(t.Context(), usage.Record{Namespace: "team-a", Name: "s"})

	if flaky.calls != 10 || len(flaky.recs) != 1 || len(next.recs) != 1 {
		t.Fatalf("flaky sink: %d writes, %d records; next sink %d records; want 10 writes (9 failures, then success) and the record in both",
			flaky.calls, len(flaky.recs), len(next.recs))
	}
	s := time.Second
	want := []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, time.Minute, time.Minute, time.Minute}
	if !slices.Equal(*asked, want) {
		t.Errorf("waits between tries %v, want %v (doubling from a second, capped at a minute)", *asked, want)
	}
}

func TestWatcherStopsRetryingWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	flaky, next := &flakySink{failures: math.MaxInt, cancelAt: 3, cancel: cancel}, &memSink{}
	w := NewWatcher(NewTracker(Config{}), nil, flaky, next)
	recordDelays(w)

	w.write(ctx, usage.Record{Namespace: "team-a", Name: "s"})

	if flaky.calls != 3 || len(next.recs) != 0 {
		t.Errorf("flaky sink: %d writes, next sink %d records; want the retries to stop at the third write, when the context ended, and no later sink written",
			flaky.calls, len(next.recs))
	}
}
