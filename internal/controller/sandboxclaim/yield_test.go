package sandboxclaim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestOptionalWritesYield checks when deferred optional writes may be sent: never while a claim
// waits, unless more than maxDeferredWrites are held back; in the order deferred; once per key.
func TestOptionalWritesYield(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	// step is one operation on the queue; take is how many next may return (0: none checked).
	type step struct {
		wait, settle, forget *types.NamespacedName
		again                bool
		// mid marks the claim again between begin and settle: an event during the pass.
		mid  bool
		add  []string
		take int
		want []string
	}
	cases := map[string]struct {
		steps []step
	}{
		"nothing waits: sent at once, in order": {steps: []step{
			{add: []string{"w1", "w2", "w3"}, take: 2, want: []string{"w1", "w2"}},
			{take: 2, want: []string{"w3"}},
		}},
		"a waiting claim holds every write": {steps: []step{
			{wait: &a, add: []string{"w1", "w2"}, take: 8},
		}},
		"sent once the last waiting claim settles": {steps: []step{
			{wait: &a}, {wait: &b},
			{add: []string{"w1"}},
			{settle: &a, take: 8},
			{settle: &b, take: 8, want: []string{"w1"}},
		}},
		"a pass that looks again soon keeps its claim waiting": {steps: []step{
			{wait: &a, add: []string{"w1"}},
			{settle: &a, again: true, take: 8},
			{settle: &a, take: 8, want: []string{"w1"}},
		}},
		"an event during the pass keeps the claim waiting for the next pass": {steps: []step{
			{wait: &a, add: []string{"w1"}},
			{settle: &a, mid: true, take: 8},
			{settle: &a, take: 8, want: []string{"w1"}},
		}},
		"a deleted claim waits no more": {steps: []step{
			{wait: &a, add: []string{"w1"}},
			{forget: &a, take: 8, want: []string{"w1"}},
		}},
		"a key queued twice is one write": {steps: []step{
			{add: []string{"k:x", "k:x", "w1"}, take: 8, want: []string{"k:x", "w1"}},
			{add: []string{"k:x"}, take: 8, want: []string{"k:x"}},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := newOptionalWrites()
			for i, s := range tc.steps {
				if s.wait != nil {
					q.wait(*s.wait)
				}
				if s.settle != nil {
					mark := q.begin(*s.settle)
					if s.mid {
						q.wait(*s.settle)
					}
					q.settle(*s.settle, mark, s.again)
				}
				if s.forget != nil {
					q.forget(*s.forget)
				}
				for _, w := range s.add {
					addNamed(q, w)
				}
				if s.take == 0 {
					continue
				}
				if diff := cmp.Diff(s.want, names(q.next(s.take))); diff != "" {
					t.Errorf("step %d: next(%d) mismatch (-want +got):\n%s", i, s.take, diff)
				}
			}
		})
	}
}

// TestOptionalWritesBound checks that claims that never stop waiting delay the optional writes
// without holding more than maxDeferredWrites of them: the oldest beyond the bound go out.
func TestOptionalWritesBound(t *testing.T) {
	q := newOptionalWrites()
	q.wait(types.NamespacedName{Namespace: "ns", Name: "a"})
	for i := range maxDeferredWrites + 3 {
		addNamed(q, fmt.Sprintf("w%d", i))
	}
	if diff := cmp.Diff([]string{"w0", "w1"}, names(q.next(2))); diff != "" {
		t.Errorf("next(2) beyond the bound mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"w2"}, names(q.next(8))); diff != "" {
		t.Errorf("next(8) with one beyond the bound mismatch (-want +got):\n%s", diff)
	}
	if got := q.next(8); got != nil {
		t.Errorf("next(8) at the bound = %v; want nothing while a claim waits", names(got))
	}
}

// TestOptionalWritesHostileClaim performs the attack of a tenant that keeps its claim waiting —
// updating it without end, each update an event that queues a pass, or leaving it where every
// pass retries at once — to hold every other claim's annotations and Events back: the claim
// holds them for maxWaitRounds rounds, then no more, and an honest claim that waits still does.
func TestOptionalWritesHostileClaim(t *testing.T) {
	hostile, honest := types.NamespacedName{Namespace: "evil", Name: "h"}, types.NamespacedName{Namespace: "ns", Name: "a"}
	cases := map[string]func(q *optionalWrites){
		"updated without end": func(q *optionalWrites) { q.wait(hostile) },
		"an event during every pass": func(q *optionalWrites) {
			mark := q.begin(hostile)
			q.wait(hostile)
			q.settle(hostile, mark, false)
		},
		"every pass retries at once": func(q *optionalWrites) { q.settle(hostile, q.begin(hostile), true) },
	}
	for name, round := range cases {
		t.Run(name, func(t *testing.T) {
			q := newOptionalWrites()
			q.wait(hostile)
			addNamed(q, "w1")
			for i := range maxWaitRounds - 1 {
				round(q)
				if got := names(q.next(8)); got != nil {
					t.Fatalf("after %d rounds the writes went out (%v); want them held for %d rounds", i+2, got, maxWaitRounds)
				}
			}
			round(q)
			if diff := cmp.Diff([]string{"w1"}, names(q.next(8))); diff != "" {
				t.Fatalf("after %d rounds (-want +got):\n%s", maxWaitRounds+1, diff)
			}
			for range 3 * maxWaitRounds {
				round(q)
			}
			q.wait(honest)
			addNamed(q, "w2")
			if got := names(q.next(8)); got != nil {
				t.Errorf("writes %v went out while an honest claim waits", got)
			}
			q.settle(honest, q.begin(honest), false)
			if diff := cmp.Diff([]string{"w2"}, names(q.next(8))); diff != "" {
				t.Errorf("once the honest claim settled, the hostile one still waiting (-want +got):\n%s", diff)
			}
		})
	}
}

// TestYieldingRecorder checks that events wait in the queue and are recorded, as given, when
// their turn comes.
func TestYieldingRecorder(t *testing.T) {
	q := newOptionalWrites()
	q.wait(types.NamespacedName{Namespace: "ns", Name: "a"})
	rec := &recordedEvents{}
	y := yieldingRecorder{EventRecorder: rec, q: q}
	y.Eventf(nil, nil, "Normal", "SandboxAdopted", "Bind", "Bound %s", "sb-1")
	if len(rec.got) != 0 || q.next(8) != nil {
		t.Fatalf("event recorded (%v) or sendable while a claim waits", rec.got)
	}
	q.forget(types.NamespacedName{Namespace: "ns", Name: "a"})
	for _, w := range q.next(8) {
		w.write(context.Background())
	}
	if diff := cmp.Diff([]string{"Normal SandboxAdopted Bind Bound sb-1"}, rec.got); diff != "" {
		t.Errorf("recorded events mismatch (-want +got):\n%s", diff)
	}
}

type recordedEvents struct{ got []string }

func (r *recordedEvents) Eventf(_, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.got = append(r.got, eventtype+" "+reason+" "+action+" "+fmt.Sprintf(note, args...))
}

// addNamed defers a write that reports name to sent when sent; a name "k:..." is also its key.
func addNamed(q *optionalWrites, name string) {
	key := ""
	if strings.HasPrefix(name, "k:") {
		key = name
	}
	q.add(key, func(ctx context.Context) {
		if sent, ok := ctx.Value(sentKey{}).(*[]string); ok {
			*sent = append(*sent, name)
		}
	})
}

type sentKey struct{}

// names sends ws and returns the names they report, in order; nil for none.
func names(ws []optionalWrite) []string {
	var sent []string
	ctx := context.WithValue(context.Background(), sentKey{}, &sent)
	for _, w := range ws {
		w.write(ctx)
	}
	return sent
}
