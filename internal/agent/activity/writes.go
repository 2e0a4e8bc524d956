package activity

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"connectrpc.com/connect"
)

// SuspendingError refuses a write once the agent is shutting down.
type SuspendingError struct {
	// Sandbox is the sandbox's name ("" when unknown).
	Sandbox string
}

func (e *SuspendingError) Error() string {
	name := e.Sandbox
	if name == "" {
		name = "this sandbox"
	} else {
		name = "sandbox " + name
	}
	return name + " is suspending; retry after it resumes"
}

// Writes admits file writes until Suspend, then refuses new ones and waits for those admitted.
// The file APIs (files, compat/pyruntime) take it as their WriteGate.
type Writes struct {
	sandbox string

	mu       sync.Mutex
	closed   bool
	inFlight int
	drained  chan struct{} // closed when closed && inFlight == 0
}

// NewWrites returns an open gate for the named sandbox.
func NewWrites(sandbox string) *Writes {
	return &Writes{sandbox: sandbox, drained: make(chan struct{})}
}

// BeginWrite admits a write, or refuses it with a *SuspendingError once Suspend was called.
// done must be called when the write has finished (its file closed and renamed).
func (g *Writes) BeginWrite() (done func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, &SuspendingError{Sandbox: g.sandbox}
	}
	g.inFlight++
	var once sync.Once
	return func() { once.Do(g.end) }, nil
}

func (g *Writes) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
	if g.closed && g.inFlight == 0 {
		close(g.drained)
	}
}

// InFlight is the number of writes admitted and not yet finished.
func (g *Writes) InFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight
}

// Suspend refuses every later write and waits until the writes in flight have finished, or ctx
// ends (then it returns ctx's error; the writes still running are cut by the servers' shutdown).
func (g *Writes) Suspend(ctx context.Context) error {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		if g.inFlight == 0 {
			close(g.drained)
		}
	}
	g.mu.Unlock()
	select {
	case <-g.drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("writes still in flight when the shutdown ended: %w", ctx.Err())
	}
}

// Interceptor guards the unary Connect procedures that write (files.WriteProcedures): each is
// admitted by BeginWrite for its whole call, or answered Unavailable with the refusal.
func (g *Writes) Interceptor(procedures ...string) connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if !slices.Contains(procedures, req.Spec().Procedure) {
				return next(ctx, req)
			}
			done, err := g.BeginWrite()
			if err != nil {
				return nil, connect.NewError(connect.CodeUnavailable, err)
			}
			defer done()
			return next(ctx, req)
		}
	})
}
