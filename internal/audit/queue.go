package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Sink stores batches of records durably. Write is called from the queue's one flushing
// goroutine, never from a request; an error makes the queue retry the same batch.
type Sink interface {
	// Name names the sink in metrics and logs ("s3", "otlp", "stdout").
	Name() string
	// Write stores records (at least one), in order.
	Write(ctx context.Context, records []Record) error
	// Close releases the sink once the queue has written its last batch.
	Close(ctx context.Context) error
}

// Defaults of QueueConfig.
const (
	// DefaultQueueSize is how many records wait for their sink at most.
	DefaultQueueSize = 10000
	// DefaultQueueBytes is the most memory the records waiting for their sink hold (Record.Size):
	// what bounds the queue when records are large (long command lines).
	DefaultQueueBytes = 32 << 20
	// DefaultBatchSize is the most records written in one batch (one S3 object).
	DefaultBatchSize = 1000
	// DefaultFlushInterval is the time window of a batch: records wait at most this long.
	DefaultFlushInterval = 10 * time.Second
	// DefaultMaxRetryDelay is the longest wait between two tries of a failed batch.
	DefaultMaxRetryDelay = time.Minute
)

// Reasons of kubox_router_audit_records_dropped_total.
const (
	// DropQueueFull: the queue held QueueConfig.Size records or QueueConfig.MaxBytes (the sinks
	// are slower than the requests, or failing).
	DropQueueFull = "queue_full"
	// DropClosed: the record came after the queue closed (a request still running after the
	// router's shutdown timeout).
	DropClosed = "closed"
	// DropShutdown: the sink still failed when the close deadline passed.
	DropShutdown = "shutdown"
)

// QueueConfig bounds a Queue; zero values are the defaults.
type QueueConfig struct {
	// Size is the most records the queue holds waiting for the sinks (DefaultQueueSize).
	Size int
	// MaxBytes is the most bytes (Record.Size) they hold together (DefaultQueueBytes).
	MaxBytes int64
	// BatchSize is the most records of one batch (DefaultBatchSize).
	BatchSize int
	// FlushInterval is the longest a record waits for its batch (DefaultFlushInterval).
	FlushInterval time.Duration
	// RetryDelay is the first wait after a failed write (1 s), doubled up to DefaultMaxRetryDelay.
	RetryDelay time.Duration
}

func (c QueueConfig) withDefaults() QueueConfig {
	if c.Size <= 0 {
		c.Size = DefaultQueueSize
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultQueueBytes
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = time.Second
	}
	return c
}

// Queue carries records to sinks in batches. Add never blocks; one goroutine writes batches
// to every sink in turn, retrying a failed write; Close writes what is queued.
type Queue struct {
	cfg   QueueConfig
	sinks []Sink
	log   *slog.Logger
	ch    chan Record
	// bytes is the Record.Size of the records in ch.
	bytes atomic.Int64
	// mu orders Add against Close: no record enters the channel once closed is set.
	mu      sync.RWMutex
	closed  bool
	closing chan struct{}
	// abort ends a flush still retrying when Close's deadline passes.
	abort     context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	dropped   *prometheus.CounterVec
	written   *prometheus.CounterVec
	failures  *prometheus.CounterVec
	queued    prometheus.GaugeFunc
	closeOnce sync.Once
}

// NewQueue starts a queue writing to sinks (at least one).
func NewQueue(cfg QueueConfig, log *slog.Logger, sinks ...Sink) (*Queue, error) {
	if len(sinks) == 0 {
		return nil, errors.New("the audit queue needs at least one sink")
	}
	cfg = cfg.withDefaults()
	q := &Queue{cfg: cfg, sinks: sinks, log: log, ch: make(chan Record, cfg.Size), closing: make(chan struct{}), done: make(chan struct{}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_router_audit_records_dropped_total",
			Help: "Audit records lost, by reason (queue_full, closed, shutdown)."}, []string{"reason"}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_router_audit_records_written_total",
			Help: "Audit records a sink stored, by sink (s3, otlp, stdout)."}, []string{"sink"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubox_router_audit_write_failures_total",
			Help: "Failed writes of a batch of audit records to a sink (retried), by sink."}, []string{"sink"}),
	}
	q.queued = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kubox_router_audit_records_queued",
		Help: "Audit records waiting for their sinks."}, func() float64 { return float64(len(q.ch)) })
	if q.log == nil {
		q.log = slog.Default()
	}
	for _, r := range []string{DropQueueFull, DropClosed, DropShutdown} {
		q.dropped.WithLabelValues(r)
	}
	q.abort, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q, nil
}

// Collectors are the queue's metrics, for the router's registry.
func (q *Queue) Collectors() []prometheus.Collector {
	return []prometheus.Collector{q.dropped, q.written, q.failures, q.queued}
}

// Add queues r without waiting: when the queue is full or closed, r is dropped and counted,
// and Add reports false.
func (q *Queue) Add(r Record) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.dropped.WithLabelValues(DropClosed).Inc()
		return false
	}
	size := int64(r.Size())
	if q.bytes.Add(size) > q.cfg.MaxBytes {
		q.bytes.Add(-size)
		q.dropped.WithLabelValues(DropQueueFull).Inc()
		return false
	}
	select {
	case q.ch <- r:
		return true
	default:
		q.bytes.Add(-size)
		q.dropped.WithLabelValues(DropQueueFull).Inc()
		return false
	}
}

// take accounts for r leaving the channel.
func (q *Queue) take(r Record) Record {
	q.bytes.Add(-int64(r.Size()))
	return r
}

// Close stops taking records, writes those queued to every sink and closes the sinks. When ctx
// ends first, the batch being written is given up (counted as dropped) and Close returns
// ctx's error.
func (q *Queue) Close(ctx context.Context) error {
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.closed = true
		q.mu.Unlock()
		close(q.closing)
	})
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancel()
		<-q.done
	}
	var errs []error
	for _, s := range q.sinks {
		if err := s.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing the audit sink %s: %w", s.Name(), err))
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("writing the last audit records: %w", err))
	}
	return errors.Join(errs...)
}

// run collects batches until the queue closes, then drains it.
func (q *Queue) run() {
	defer close(q.done)
	defer q.cancel()
	batch := make([]Record, 0, q.cfg.BatchSize)
	tick := time.NewTicker(q.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case r := <-q.ch:
			if batch = append(batch, q.take(r)); len(batch) >= q.cfg.BatchSize {
				batch = q.flush(batch)
			}
		case <-tick.C:
			batch = q.flush(batch)
		case <-q.closing:
			for {
				select {
				case r := <-q.ch:
					if batch = append(batch, q.take(r)); len(batch) >= q.cfg.BatchSize {
						batch = q.flush(batch)
					}
				default:
					q.flush(batch)
					return
				}
			}
		}
	}
}

// flush writes batch to every sink, retrying each failed write until it succeeds or the
// queue's close deadline passes, and returns batch emptied for reuse.
func (q *Queue) flush(batch []Record) []Record {
	if len(batch) == 0 {
		return batch
	}
	if q.abort.Err() != nil {
		q.dropped.WithLabelValues(DropShutdown).Add(float64(len(batch)))
		clear(batch)
		return batch[:0]
	}
	for _, s := range q.sinks {
		err := retryBackoff(q.cfg.RetryDelay).Until(q.abort, true, true, func(ctx context.Context) (bool, error) {
			err := s.Write(ctx, batch)
			if err != nil {
				q.failures.WithLabelValues(s.Name()).Inc()
				q.log.Error("Writing audit records failed; retrying", "sink", s.Name(), "records", len(batch), "error", err)
			}
			return err == nil, nil
		})
		if err != nil {
			q.dropped.WithLabelValues(DropShutdown).Add(float64(len(batch)))
			q.log.Error("Gave up writing audit records at shutdown", "sink", s.Name(), "records", len(batch))
			clear(batch)
			return batch[:0]
		}
		q.written.WithLabelValues(s.Name()).Add(float64(len(batch)))
	}
	clear(batch)
	return batch[:0]
}

// retryBackoff is the wait between two tries of a failed write: first, doubled up to
// DefaultMaxRetryDelay, then DefaultMaxRetryDelay until the write succeeds or the queue aborts.
func retryBackoff(first time.Duration) wait.DelayFunc {
	return wait.Backoff{Duration: first, Factor: 2, Cap: DefaultMaxRetryDelay, Steps: math.MaxInt32}.DelayFunc()
}
