package router

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// Timing of the activity tracker.
const (
	// minActivityWindow is the shortest time between two writes of a sandbox's last-activity:
	// a sandbox whose suspendAfter is 30s still costs at most one write per 15s.
	minActivityWindow = 15 * time.Second
	// activityRefresh is how often the tracker looks at sandboxes with requests still open.
	activityRefresh = 10 * time.Second
	// activityRetry is how long the tracker waits after a failed write before it writes again.
	activityRetry = 30 * time.Second
	// activityWriteTimeout bounds one write.
	activityWriteTimeout = 10 * time.Second
)

// activityWindow is how old a sandbox's last-activity may get before the router writes it
// again: half its suspendAfter, so the controller, which looks at suspendAfter after the last
// activity it saw, always finds a value at most half a period old while requests come; at
// least minActivityWindow.
func activityWindow(p *sandboxv1beta1.IdlePolicy) time.Duration {
	return max(p.SuspendAfter.Duration/2, minActivityWindow)
}

// lastActivity is the time in sb's kubox.dev/last-activity annotation; zero when absent or
// malformed.
func lastActivity(sb *sandboxv1beta1.Sandbox) time.Time {
	t, err := time.Parse(time.RFC3339, sb.Annotations[sandboxv1beta1.LastActivityAnnotation])
	if err != nil {
		return time.Time{}
	}
	return t
}

// formatActivity is how a time is written into the annotation: RFC 3339, UTC, seconds.
func formatActivity(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// activityTracker follows the requests to sandboxes that have an idle policy and keeps their
// kubox.dev/last-activity annotation fresh enough for the controller, at a bounded cost: a
// sandbox gets a write only when the newest value the router knows (the annotation in its
// cache, or its own last write) is older than activityWindow, at most one write in flight per
// sandbox, never on a request's path, and no new attempt for activityRetry after a failure.
type activityTracker struct {
	// write sets the annotation of ns/name to at; lookup reads the sandbox from the cache (nil
	// when it is gone).
	write  func(ctx context.Context, ns, name string, at time.Time) error
	lookup func(ctx context.Context, ns, name string) *sandboxv1beta1.Sandbox
	now    func() time.Time
	writes *prometheus.CounterVec
	log    *slog.Logger
	bg     *background

	mu        sync.Mutex
	bySandbox map[types.UID]*activity
}

// activity is what the tracker knows of one sandbox.
type activity struct {
	namespace, name string
	window          time.Duration
	// open counts the sandbox's requests in flight (streams and upgraded connections until they
	// end).
	open int
	// last is the time of the newest request (its start or its end).
	last time.Time
	// known is the newest last-activity the router wrote or saw in its cache.
	known time.Time
	// writing is true while a write is in flight; retryAt holds writes back after a failure.
	writing bool
	retryAt time.Time
}

// begin records a request to sb, which has an idle policy, and returns the function that
// records its end: call it when the response (stream, upgraded connection) is over.
func (t *activityTracker) begin(sb *sandboxv1beta1.Sandbox) (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.bySandbox[sb.UID]
	if a == nil {
		a = &activity{}
		t.bySandbox[sb.UID] = a
	}
	a.namespace, a.name, a.window = sb.Namespace, sb.Name, activityWindow(sb.Spec.IdlePolicy)
	if seen := lastActivity(sb); seen.After(a.known) {
		a.known = seen
	}
	a.open++
	a.last = t.now()
	t.maybeWrite(sb.UID, a)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		a.open--
		a.last = t.now()
		t.maybeWrite(sb.UID, a)
	}
}

// written records a last-activity the router wrote elsewhere (when it wakes a sandbox).
func (t *activityTracker) written(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a := t.bySandbox[uid]; a != nil && at.After(a.known) {
		a.known = at.Truncate(time.Second)
	}
}

// maybeWrite starts a write of a's last activity when the rule asks for one. t.mu is held.
func (t *activityTracker) maybeWrite(uid types.UID, a *activity) {
	if a.writing || a.last.Before(a.retryAt) || a.last.Sub(a.known) <= a.window {
		return
	}
	a.writing = true
	ns, name, at := a.namespace, a.name, a.last.Truncate(time.Second)
	t.bg.goBackground(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, activityWriteTimeout)
		defer cancel()
		err := t.write(ctx, ns, name, at)
		t.mu.Lock()
		defer t.mu.Unlock()
		a.writing = false
		if err != nil {
			a.retryAt = t.now().Add(activityRetry)
			t.writes.WithLabelValues(metrics.ActivityWriteError).Inc()
			t.log.Warn("Could not write the last activity of a sandbox; trying again later", "namespace", ns, "name", name,
				"retryIn", activityRetry.String(), "error", err)
			return
		}
		t.writes.WithLabelValues(metrics.ActivityWriteSuccess).Inc()
		if at.After(a.known) {
			a.known = at
		}
	})
}

// refresh treats every sandbox with requests open as active now (writing under the same rule),
// and forgets the others once their last request is a window old: a later request finds the
// router's write in the cache's annotation.
func (t *activityTracker) refresh(ctx context.Context) {
	t.mu.Lock()
	var open []*activity
	for uid, a := range t.bySandbox {
		switch {
		case a.open > 0:
			open = append(open, a)
		case !a.writing && t.now().Sub(a.last) > a.window:
			delete(t.bySandbox, uid)
		}
	}
	t.mu.Unlock()
	for _, a := range open {
		t.mu.Lock()
		ns, name := a.namespace, a.name
		t.mu.Unlock()
		sb := t.lookup(ctx, ns, name)
		t.mu.Lock()
		if sb != nil && sb.Spec.IdlePolicy != nil && a.open > 0 {
			if seen := lastActivity(sb); seen.After(a.known) {
				a.known = seen
			}
			a.window = activityWindow(sb.Spec.IdlePolicy)
			a.last = t.now()
			t.maybeWrite(sb.UID, a)
		}
		t.mu.Unlock()
	}
}

// run refreshes the sandboxes with open requests every activityRefresh until ctx ends.
func (t *activityTracker) run(ctx context.Context) {
	tick := time.NewTicker(activityRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.refresh(ctx)
		}
	}
}

// tracked is how many sandboxes the tracker remembers.
func (t *activityTracker) tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.bySandbox)
}

// writeLastActivity sets the kubox.dev/last-activity annotation of Sandbox ns/name to at, with
// the router's own client and field manager. A merge patch of one annotation: it conflicts with
// nothing, and a Sandbox deleted meanwhile is NotFound rather than recreated.
func (rt *Router) writeLastActivity(ctx context.Context, ns, name string, at time.Time) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, sandboxv1beta1.LastActivityAnnotation, formatActivity(at))
	sb := &sandboxv1beta1.Sandbox{}
	sb.Namespace, sb.Name = ns, name
	return rt.writer.Patch(ctx, sb, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
}

// cachedSandbox reads Sandbox ns/name from the cache; nil when it is gone or unreadable.
func (rt *Router) cachedSandbox(ctx context.Context, ns, name string) *sandboxv1beta1.Sandbox {
	sb, herr := rt.lookupSandbox(ctx, ns, name)
	if herr != nil {
		return nil
	}
	return sb
}

// FieldManager is the field manager of the router's writes to Sandboxes: the last-activity
// annotation, and the resume of a sandbox it wakes.
const FieldManager = "kubox-router"

// background runs the router's work that outlives a request (activity writes, wakes) and stops
// it when the router stops: ctx ends, and the router waits for the goroutines.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel}
}

// goBackground runs fn in a goroutine with the background's context; after stop, it runs fn
// at once with that (ended) context, so whoever waits for fn's result gets it.
func (b *background) goBackground(fn func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		go fn(b.ctx)
		return
	}
	b.wg.Go(func() { fn(b.ctx) })
}

// stop ends the background's context and waits for its goroutines.
func (b *background) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}
