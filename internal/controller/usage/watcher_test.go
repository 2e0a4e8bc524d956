package usage

import (
	"context"
	"sync"
	"testing"
	"time"

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
