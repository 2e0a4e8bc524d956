package mcpserver

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"
)

// fakeClaim records its release.
type fakeClaim struct {
	mu       sync.Mutex
	released int
}

func (f *fakeClaim) Close(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released++
	return nil
}

func (f *fakeClaim) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released
}

func TestRegistryReleases(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := newRegistry(time.Minute, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	a, b, c, d := &fakeClaim{}, &fakeClaim{}, &fakeClaim{}, &fakeClaim{}
	r.add("ns/a", "alice", "s1", a)
	r.add("ns/b", "alice", "s2", b)
	r.add("ns/c", "bob", "", c)
	r.add("ns/d", "bob", "", d)
	ctx := context.Background()

	now = now.Add(50 * time.Second)
	r.touch("ns/c")
	now = now.Add(20 * time.Second) // a, b, d idle 70 s; c 20 s
	r.releaseSession(ctx, "s1")
	if a.count() != 1 || b.count() != 0 {
		t.Errorf("session s1 ended: released a %d, b %d times; want 1, 0", a.count(), b.count())
	}
	r.releaseIdleOnce(ctx)
	if b.count() != 1 || d.count() != 1 || c.count() != 0 {
		t.Errorf("idle pass: released b %d, d %d, c %d times; want 1, 1, 0", b.count(), d.count(), c.count())
	}
	if got := keys(r); len(got) != 1 || got[0] != "ns/c" {
		t.Errorf("held after the idle pass: %v; want [ns/c]", got)
	}
	r.forget("ns/c")
	r.releaseAll(ctx)
	if c.count() != 0 {
		t.Errorf("a forgotten claim was released %d times", c.count())
	}
	if a.count() != 1 || b.count() != 1 || d.count() != 1 {
		t.Error("a claim was released twice")
	}
}

func TestOwnedIsPerCaller(t *testing.T) {
	r := newRegistry(time.Minute, time.Now, slog.New(slog.DiscardHandler))
	r.add("ns/a", "alice", "", &fakeClaim{})
	if r.owned("ns/a", "bob") != nil || r.owned("ns/x", "alice") != nil {
		t.Error("owned returned a handle for another caller or an unknown claim")
	}
}

func keys(r *registry) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.held {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCappedKeepsTheStart(t *testing.T) {
	c := &capped{max: 5}
	for _, s := range []string{"ab", "cd", "efg", "h"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if c.String() != "abcde" || !c.truncated {
		t.Errorf("capped = %q truncated %v; want abcde, true", c.String(), c.truncated)
	}
}
