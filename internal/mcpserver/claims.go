package mcpserver

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// releaser deletes a claim; *kubox.Sandbox's Close is one.
type releaser interface {
	Close(ctx context.Context) error
}

// held is a claim made through the server.
type held struct {
	sandbox  releaser
	owner    string // caller id
	session  string // MCP session ID; "" for stdio and sessionless requests
	lastUsed time.Time
}

// registry tracks the claims made through the server, to release them when their session ends,
// when idle, and when the server stops. Keys are "namespace/claim".
type registry struct {
	idle time.Duration
	now  func() time.Time
	log  *slog.Logger

	mu   sync.Mutex
	held map[string]*held
}

func newRegistry(idle time.Duration, now func() time.Time, log *slog.Logger) *registry {
	return &registry{idle: idle, now: now, log: log, held: map[string]*held{}}
}

// add records a claim made by owner in session.
func (r *registry) add(key, owner, session string, sb releaser) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[key] = &held{sandbox: sb, owner: owner, session: session, lastUsed: r.now()}
}

// touch marks key used now, if the server holds it.
func (r *registry) touch(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.held[key]; h != nil {
		h.lastUsed = r.now()
	}
}

// forget drops key without releasing it (it was released by a tool call).
func (r *registry) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, key)
}

// take removes and returns the claims match selects.
func (r *registry) take(match func(*held) bool) map[string]*held {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]*held{}
	for k, h := range r.held {
		if match(h) {
			out[k] = h
			delete(r.held, k)
		}
	}
	return out
}

// release deletes the claims in hs, logging failures: each claim's TTL deletes it anyway.
func (r *registry) release(ctx context.Context, why string, hs map[string]*held) {
	for k, h := range hs {
		if err := h.sandbox.Close(ctx); err != nil {
			r.log.Error("Releasing a claim failed; its TTL will delete it", "claim", k, "reason", why, "err", err)
			continue
		}
		r.log.Info("Released a claim", "claim", k, "reason", why, "owner", h.owner)
	}
}

// releaseSession releases the claims made in session id.
func (r *registry) releaseSession(ctx context.Context, id string) {
	r.release(ctx, "session ended", r.take(func(h *held) bool { return h.session == id }))
}

// releaseAll releases every claim.
func (r *registry) releaseAll(ctx context.Context) {
	r.release(ctx, "server stopped", r.take(func(*held) bool { return true }))
}

// releaseIdleOnce releases the claims unused for r.idle.
func (r *registry) releaseIdleOnce(ctx context.Context) {
	cutoff := r.now().Add(-r.idle)
	r.release(ctx, "idle", r.take(func(h *held) bool { return h.lastUsed.Before(cutoff) }))
}

// releaseIdle releases idle claims every quarter of the idle time until ctx ends.
func (r *registry) releaseIdle(ctx context.Context) {
	t := time.NewTicker(max(r.idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.releaseIdleOnce(ctx)
		}
	}
}

// owned returns the sandbox of key if the server holds it for owner; a claim made by another
// identity is never reached with that identity's handle.
func (r *registry) owned(key, owner string) *kubox.Sandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[key]
	if h == nil || h.owner != owner {
		return nil
	}
	sb, _ := h.sandbox.(*kubox.Sandbox)
	return sb
}
