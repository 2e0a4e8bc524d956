package usage

import (
	"context"
	"log/slog"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/usage"
)

// Sink is where usage records go: usage.JSONLines (stdout) or usage.S3.
type Sink interface {
	Name() string
	Write(ctx context.Context, records []usage.Record) error
	Close(ctx context.Context) error
}

// pendingRecords bounds the records waiting for the sinks; beyond it a record is dropped and
// logged (the controller never blocks on a slow store).
const pendingRecords = 4096

// retryBackoff is the wait between two tries of a failed sink write: a second, doubled up to a
// minute, then a minute until the write succeeds or the controller stops.
var retryBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: math.MaxInt32}

// Watcher is a cache.ResourceEventHandler for Sandboxes: it feeds the Tracker on every event
// and, on deletion, queues the sandbox's record for the sinks. Recording on the delete event
// (not a finalizer) means a store outage can never hold a deletion; see the package doc for
// what is lost.
type Watcher struct {
	tracker *Tracker
	sinks   []Sink
	log     *slog.Logger
	now     func() time.Time
	queue   chan usage.Record
	// retryDelays returns the waits between the tries of one record on one sink.
	retryDelays func() wait.DelayFunc
}

// NewWatcher returns a Watcher; log nil discards its logs.
func NewWatcher(t *Tracker, log *slog.Logger, sinks ...Sink) *Watcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{tracker: t, sinks: sinks, log: log, now: time.Now,
		queue: make(chan usage.Record, pendingRecords), retryDelays: retryBackoff.DelayFunc}
}

// OnAdd implements cache.ResourceEventHandler.
func (w *Watcher) OnAdd(obj any, _ bool) {
	if sb, ok := obj.(*sandboxv1beta1.Sandbox); ok {
		w.tracker.Observe(sb, w.now())
	}
}

// OnUpdate implements cache.ResourceEventHandler.
func (w *Watcher) OnUpdate(_, obj any) { w.OnAdd(obj, false) }

// OnDelete implements cache.ResourceEventHandler, tombstones included.
func (w *Watcher) OnDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	sb, ok := obj.(*sandboxv1beta1.Sandbox)
	if !ok {
		return
	}
	rec, ok := w.tracker.Delete(sb, w.now())
	if !ok {
		return
	}
	select {
	case w.queue <- rec:
	default:
		w.log.Error("usage record dropped: the queue to the sinks is full", "sandbox", sb.Namespace+"/"+sb.Name, "uid", sb.UID)
	}
}

// Start writes queued records to the sinks until ctx ends (a manager Runnable).
func (w *Watcher) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case rec := <-w.queue:
			w.write(ctx, rec)
		}
	}
}

// drain writes every queued record (tests).
func (w *Watcher) drain(ctx context.Context) {
	for {
		select {
		case rec := <-w.queue:
			w.write(ctx, rec)
		default:
			return
		}
	}
}

// write writes rec to every sink, retrying each failed sink with retryBackoff until ctx ends.
func (w *Watcher) write(ctx context.Context, rec usage.Record) {
	for _, s := range w.sinks {
		err := w.retryDelays().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
			err := s.Write(ctx, []usage.Record{rec})
			if err != nil {
				w.log.Error("writing a usage record failed; retrying", "sink", s.Name(), "sandbox", rec.Namespace+"/"+rec.Name, "err", err)
			}
			return err == nil, nil
		})
		if err != nil {
			return
		}
	}
}
