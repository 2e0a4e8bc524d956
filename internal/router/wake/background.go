package wake

import (
	"context"
	"sync"
)

// Background runs the router's work that outlives a request (activity writes, wakes, the
// dashboard's scrapes) and stops it when the router stops: its context ends, and Stop waits for
// the goroutines.
type Background struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool
}

// NewBackground returns a Background whose context is live until Cancel or Stop.
func NewBackground() *Background {
	ctx, cancel := context.WithCancel(context.Background())
	return &Background{ctx: ctx, cancel: cancel}
}

// Go runs fn in a goroutine with the background's context; after Stop, it runs fn at once with
// that (ended) context, so whoever waits for fn's result gets it.
func (b *Background) Go(fn func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		go fn(b.ctx)
		return
	}
	b.wg.Go(func() { fn(b.ctx) })
}

// Cancel ends the background's context without waiting.
func (b *Background) Cancel() { b.cancel() }

// Stop ends the background's context and waits for its goroutines.
func (b *Background) Stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}
