package audit

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeSink keeps what it is given; while block is open, Write waits for it; failures makes the
// first writes fail.
type fakeSink struct {
	mu       sync.Mutex
	written  []Record
	block    chan struct{}
	failures int
	closed   bool
}

func (*fakeSink) Name() string { return "fake" }

func (s *fakeSink) Write(ctx context.Context, records []Record) error {
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures > 0 {
		s.failures--
		return errors.New("the bucket is unreachable")
	}
	s.written = append(s.written, records...)
	return nil
}

func (s *fakeSink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *fakeSink) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p []string
	for _, r := range s.written {
		p = append(p, r.Path)
	}
	return p
}

func records(n int) []Record {
	var rs []Record
	for i := range n {
		rs = append(rs, Record{Path: "/" + strconv.Itoa(i)})
	}
	return rs
}

func paths(rs []Record) []string {
	var p []string
	for _, r := range rs {
		p = append(p, r.Path)
	}
	return p
}

// TestQueue covers what the queue promises: every record added before Close reaches the sink in
// order (in batches of BatchSize); a full queue drops and counts instead of waiting; a failing
// sink is retried; a sink still failing at the close deadline loses its batch, counted.
func TestQueue(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg         QueueConfig
		sink        *fakeSink
		add         int
		large       bool
		closeWithin time.Duration
		wantWritten int
		wantDropped map[string]float64
		wantAdded   int
	}{
		"every record reaches the sink on close": {
			cfg: QueueConfig{Size: 100, BatchSize: 7, FlushInterval: time.Hour}, sink: &fakeSink{}, add: 50,
			closeWithin: time.Minute, wantWritten: 50, wantAdded: 50,
		},
		"a full queue drops without waiting": {
			// The sink blocks on its first batch (of 1): the queue then holds Size, the rest is dropped.
			cfg: QueueConfig{Size: 10, BatchSize: 1, FlushInterval: time.Hour}, sink: &fakeSink{block: make(chan struct{})}, add: 30,
			closeWithin: 0, wantWritten: 0, wantDropped: map[string]float64{DropQueueFull: 19, DropShutdown: 11}, wantAdded: 11,
		},
		"large records fill the queue's bytes before its count": {
			// Each record is about 10 KiB: 4 fit in 40 KiB (one is held by the blocked sink).
			cfg:  QueueConfig{Size: 100, MaxBytes: 40 << 10, BatchSize: 1, FlushInterval: time.Hour},
			sink: &fakeSink{block: make(chan struct{})}, add: 10, large: true,
			closeWithin: 0, wantDropped: map[string]float64{DropQueueFull: 5, DropShutdown: 5}, wantAdded: 5,
		},
		"a failing sink is retried": {
			cfg: QueueConfig{Size: 100, BatchSize: 100, FlushInterval: time.Hour, RetryDelay: time.Millisecond}, sink: &fakeSink{failures: 3},
			add: 5, closeWithin: time.Minute, wantWritten: 5, wantAdded: 5,
		},
	} {
		t.Run(name, func(t *testing.T) {
			q, err := NewQueue(tc.cfg, slog.New(slog.DiscardHandler), tc.sink)
			if err != nil {
				t.Fatal(err)
			}
			added := 0
			for i, r := range records(tc.add) {
				if tc.large {
					r.Error = strings.Repeat("x", 10<<10-recordOverhead-len(r.Path))
				}
				if q.Add(r) {
					added++
				}
				if i == 0 && tc.sink.block != nil {
					waitLen(t, q, 0) // the flusher holds the first record, blocked in the sink
				}
			}
			if added != tc.wantAdded {
				t.Errorf("Add accepted %d records, want %d", added, tc.wantAdded)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.closeWithin)
			defer cancel()
			err = q.Close(ctx)
			if (err != nil) != (tc.closeWithin == 0) {
				t.Errorf("Close: %v", err)
			}
			want := paths(records(tc.add))[:tc.wantWritten]
			if diff := cmp.Diff(want, tc.sink.paths()); diff != "" && tc.wantWritten > 0 || tc.wantWritten == 0 && len(tc.sink.paths()) != 0 {
				t.Errorf("records written (-want +got):\n%s", diff)
			}
			for _, reason := range []string{DropQueueFull, DropClosed, DropShutdown} {
				if got := testutil.ToFloat64(q.dropped.WithLabelValues(reason)); got != tc.wantDropped[reason] {
					t.Errorf("dropped %s: %v, want %v", reason, got, tc.wantDropped[reason])
				}
			}
			if !tc.sink.closed {
				t.Error("the sink was not closed")
			}
			if q.Add(Record{}) || testutil.ToFloat64(q.dropped.WithLabelValues(DropClosed)) != 1 {
				t.Error("Add after Close was not refused and counted")
			}
		})
	}
}

// waitLen waits until q's channel holds n records.
func waitLen(t *testing.T, q *Queue, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(q.ch) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d records, want %d", len(q.ch), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestQueueFlushesEachWindow: records are written within FlushInterval, without Close.
func TestQueueFlushesEachWindow(t *testing.T) {
	s := &fakeSink{}
	q, err := NewQueue(QueueConfig{FlushInterval: 5 * time.Millisecond}, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = q.Close(context.Background()) }()
	q.Add(Record{Path: "/a"})
	deadline := time.Now().Add(10 * time.Second)
	for len(s.paths()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the record was not written within the flush interval's window")
		}
		time.Sleep(time.Millisecond)
	}
}
