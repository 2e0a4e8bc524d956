package sandboxclaim

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
)

// Optional write tuning.
const (
	// maxDeferredWrites bounds the optional writes held back: beyond it the oldest are sent even
	// while claims wait, so claims that never stop coming delay them without growing the queue.
	maxDeferredWrites = 1000
	// optionalWriters is how many deferred writes are sent at once once no claim waits.
	optionalWriters = 8
	// maxWaitRounds is how many events and quick retries a claim waits through, without a pass
	// settling it, before it holds the optional writes no more: a claim on its way to Ready has
	// a handful (its creation, its bind, its sandbox's changes), and one its owner updates without
	// end, or that retries without end, must not hold every other claim's writes back.
	maxWaitRounds = 16
)

// optionalWrites holds back the claim controller's optional writes — agent-sandbox's
// observability annotations and the Events — while any claim waits for the controller: on a
// saturated API server every write queues behind the others, and a claim's way to Ready is its
// bind and its status write. A claim waits from the moment an event says it has work on the
// critical path (it is not Ready, or its sandbox changed) until a pass over it ends without
// asking to be looked at again within cacheLagRetry. The writes are sent, optionalWriters at a
// time, in the order they were deferred, whenever no claim waits, and beyond maxDeferredWrites
// whatever waits. It is safe for concurrent use: event handlers mark claims waiting, reconcile
// passes settle them and defer writes, and run sends. Nothing in it is read from a tenant's
// object but whether the claim is Ready: a tenant can make its own claims wait, each for
// maxWaitRounds rounds, and no more than maxDeferredWrites writes wait for them.
type optionalWrites struct {
	mu sync.Mutex
	// waiting counts, per claim, the events and quick retries that made it wait since a pass
	// last settled it; a pass settles the claim only if no event came during it (that event
	// queued another pass). blocking is how many of them count at most maxWaitRounds: those
	// claims hold the writes back.
	waiting  map[types.NamespacedName]uint64
	blocking int
	// queue is the deferred writes, oldest first; keys dedupes the keyed ones.
	queue []optionalWrite
	keys  map[string]struct{}
	// wake is signalled when the queue grows or the last waiting claim settles.
	wake chan struct{}
}

// optionalWrite is one deferred write; key, when not empty, makes a second one with the same key
// a no-op while the first is queued.
type optionalWrite struct {
	key   string
	write func(context.Context)
}

func newOptionalWrites() *optionalWrites {
	return &optionalWrites{waiting: map[types.NamespacedName]uint64{}, keys: map[string]struct{}{}, wake: make(chan struct{}, 1)}
}

func (q *optionalWrites) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// wait marks the claim key as waiting: an event queued a pass over it. Nil-safe, as are all of
// begin, settle and forget: a Reconciler without a queue writes at once.
func (q *optionalWrites) wait(key types.NamespacedName) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.round(key)
}

// round counts one more round of the claim's wait; the caller holds mu.
func (q *optionalWrites) round(key types.NamespacedName) {
	n := q.waiting[key] + 1
	q.waiting[key] = n
	switch n {
	case 1:
		q.blocking++
	case maxWaitRounds + 1:
		q.release()
	}
}

// drop ends the claim's wait; the caller holds mu.
func (q *optionalWrites) drop(key types.NamespacedName) {
	n, ok := q.waiting[key]
	if !ok {
		return
	}
	delete(q.waiting, key)
	if n <= maxWaitRounds {
		q.release()
	}
}

// release counts one claim fewer holding the writes, and wakes the sender at the last.
func (q *optionalWrites) release() {
	q.blocking--
	if q.blocking == 0 {
		q.signal()
	}
}

// begin returns the claim's mark as a pass over it starts, for settle.
func (q *optionalWrites) begin(key types.NamespacedName) uint64 {
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting[key]
}

// settle ends the claim's wait after a pass that began at mark, unless an event marked the
// claim during the pass, or the pass must look again soon (again), which counts as a round.
func (q *optionalWrites) settle(key types.NamespacedName, mark uint64, again bool) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	n, ok := q.waiting[key]
	switch {
	case !ok || n != mark:
	case again:
		q.round(key)
	default:
		q.drop(key)
	}
}

// forget ends the claim's wait whatever it was: it is deleted.
func (q *optionalWrites) forget(key types.NamespacedName) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drop(key)
}

// add defers write; with a key already queued it does nothing.
func (q *optionalWrites) add(key string, write func(context.Context)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if key != "" {
		if _, ok := q.keys[key]; ok {
			return
		}
		q.keys[key] = struct{}{}
	}
	q.queue = append(q.queue, optionalWrite{key: key, write: write})
	q.signal()
}

// next takes up to n writes that may be sent now: the oldest, when no claim waits, and
// otherwise only those beyond maxDeferredWrites.
func (q *optionalWrites) next(n int) []optionalWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.blocking > 0 {
		n = min(n, len(q.queue)-maxDeferredWrites)
	}
	n = min(n, len(q.queue))
	if n <= 0 {
		return nil
	}
	out := append([]optionalWrite(nil), q.queue[:n]...)
	q.queue = q.queue[n:]
	for _, w := range out {
		delete(q.keys, w.key)
	}
	return out
}

// Start sends the deferred writes until ctx ends (a manager.Runnable: it runs on the leader,
// where the passes run).
func (q *optionalWrites) Start(ctx context.Context) error {
	for {
		batch := q.next(optionalWriters)
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-q.wake:
				continue
			}
		}
		var wg sync.WaitGroup
		for _, w := range batch {
			wg.Go(func() { w.write(ctx) })
		}
		wg.Wait()
	}
}

// deferAnnotations queues the observability annotations of claim: sent once no claim waits, from
// the claim as the cache then has it, with the sandbox its status then names. Nothing is sent for
// a claim that is gone, has another UID (deleted and created again), is annotated or names no
// sandbox yet (the cache is behind its status write: the event of that write brings a pass that
// queues the patch again).
func (r *Reconciler) deferAnnotations(claim *extv1beta1.SandboxClaim) {
	key, uid := types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}, claim.UID
	r.optional.add("annotate/"+string(uid), func(ctx context.Context) {
		c := &extv1beta1.SandboxClaim{}
		if err := r.client.Get(ctx, key, c); err != nil || c.UID != uid || c.DeletionTimestamp != nil || c.Status.Sandbox.Name == "" {
			return
		}
		if err := r.annotateBound(ctx, c, c.Status.Sandbox.Name); err != nil {
			// Not retried from here: the claim's next pass (any event of it or its sandbox, or
			// a restart) finds it unannotated and queues the patch again.
			ctrl.Log.WithName(Name).Error(err, "Writing a claim's observability annotations", "claim", key)
		}
	})
}

// yieldingRecorder defers the events of a recorder behind the waiting claims. Events are
// recorded when sent: their eventTime is when the controller sent them, after the claims it
// yielded to.
type yieldingRecorder struct {
	events.EventRecorder
	q *optionalWrites
}

// Eventf defers the event. The objects are the pass's own copies, which nothing changes after
// the pass; the event's reference to them is taken when it is sent.
func (y yieldingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	y.q.add("", func(context.Context) {
		y.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	})
}
