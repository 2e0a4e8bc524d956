package wake

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

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

// LastActivity is the time in sb's kubox.dev/last-activity annotation; zero when absent or
// malformed.
func LastActivity(sb *sandboxv1beta1.Sandbox) time.Time {
	t, err := time.Parse(time.RFC3339, sb.Annotations[sandboxv1beta1.LastActivityAnnotation])
	if err != nil {
		return time.Time{}
	}
	return t
}

// FormatActivity is how a time is written into the annotation: RFC 3339, UTC, seconds.
func FormatActivity(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// Tracker follows the requests to sandboxes that have an idle policy and keeps their
// kubox.dev/last-activity annotation fresh enough for the controller, at a bounded cost: a
// sandbox gets a write only when the newest value the router knows (the annotation in its
// cache, or its own last write) is older than activityWindow, at most one write in flight per
// sandbox, never on a request's path, and no new attempt for activityRetry after a failure.
type Tracker struct {
	TrackerDeps

	mu        sync.Mutex
	bySandbox map[types.UID]*activity
}

// TrackerDeps is what a Tracker acts with.
type TrackerDeps struct {
	// Write sets the annotation of ns/name to at (Writer.LastActivity); Lookup reads the sandbox
	// from the cache (nil when it is gone).
	Write  func(ctx context.Context, ns, name string, at time.Time) error
	Lookup func(ctx context.Context, ns, name string) *sandboxv1beta1.Sandbox
	Now    func() time.Time
	// Writes counts the writes by outcome (metrics.ActivityWrites).
	Writes *prometheus.CounterVec
	Log    *slog.Logger
	BG     *Background
}

// NewTracker returns a Tracker that knows no sandbox yet.
func NewTracker(d TrackerDeps) *Tracker {
	return &Tracker{TrackerDeps: d, bySandbox: map[types.UID]*activity{}}
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

// Begin records a request to sb, which has an idle policy, and returns the function that
// records its end: call it when the response (stream, upgraded connection) is over.
func (t *Tracker) Begin(sb *sandboxv1beta1.Sandbox) (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.bySandbox[sb.UID]
	if a == nil {
		a = &activity{}
		t.bySandbox[sb.UID] = a
	}
	a.namespace, a.name, a.window = sb.Namespace, sb.Name, activityWindow(sb.Spec.IdlePolicy)
	if seen := LastActivity(sb); seen.After(a.known) {
		a.known = seen
	}
	a.open++
	a.last = t.Now()
	t.maybeWrite(sb.UID, a)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		a.open--
		a.last = t.Now()
		t.maybeWrite(sb.UID, a)
	}
}

// Written records a last-activity the router wrote elsewhere (when it wakes a sandbox).
func (t *Tracker) Written(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a := t.bySandbox[uid]; a != nil && at.After(a.known) {
		a.known = at.Truncate(time.Second)
	}
}

// maybeWrite starts a write of a's last activity when the rule asks for one. t.mu is held.
func (t *Tracker) maybeWrite(uid types.UID, a *activity) {
	if a.writing || a.last.Before(a.retryAt) || a.last.Sub(a.known) <= a.window {
		return
	}
	a.writing = true
	ns, name, at := a.namespace, a.name, a.last.Truncate(time.Second)
	t.BG.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, activityWriteTimeout)
		defer cancel()
		err := t.Write(ctx, ns, name, at)
		t.mu.Lock()
		defer t.mu.Unlock()
		a.writing = false
		if err != nil {
			a.retryAt = t.Now().Add(activityRetry)
			t.Writes.WithLabelValues(metrics.ActivityWriteError).Inc()
			t.Log.Warn("Could not write the last activity of a sandbox; trying again later", "namespace", ns, "name", name,
				"retryIn", activityRetry.String(), "error", err)
			return
		}
		t.Writes.WithLabelValues(metrics.ActivityWriteSuccess).Inc()
		if at.After(a.known) {
			a.known = at
		}
	})
}

// refresh treats every sandbox with requests open as active now (writing under the same rule),
// and forgets the others once their last request is a window old: a later request finds the
// router's write in the cache's annotation.
func (t *Tracker) refresh(ctx context.Context) {
	t.mu.Lock()
	var open []*activity
	for uid, a := range t.bySandbox {
		switch {
		case a.open > 0:
			open = append(open, a)
		case !a.writing && t.Now().Sub(a.last) > a.window:
			delete(t.bySandbox, uid)
		}
	}
	t.mu.Unlock()
	for _, a := range open {
		t.mu.Lock()
		ns, name := a.namespace, a.name
		t.mu.Unlock()
		sb := t.Lookup(ctx, ns, name)
		t.mu.Lock()
		if sb != nil && sb.Spec.IdlePolicy != nil && a.open > 0 {
			if seen := LastActivity(sb); seen.After(a.known) {
				a.known = seen
			}
			a.window = activityWindow(sb.Spec.IdlePolicy)
			a.last = t.Now()
			t.maybeWrite(sb.UID, a)
		}
		t.mu.Unlock()
	}
}

// Run refreshes the sandboxes with open requests every activityRefresh until ctx ends.
func (t *Tracker) Run(ctx context.Context) {
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
func (t *Tracker) tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.bySandbox)
}
