package activity

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
)

func TestWritesRefusesAfterSuspendAndWaitsForThoseInFlight(t *testing.T) {
	g := NewWrites("sb-1")
	done, err := g.BeginWrite()
	if err != nil {
		t.Fatalf("BeginWrite before Suspend: %v", err)
	}
	suspended := make(chan error, 1)
	go func() { suspended <- g.Suspend(context.Background()) }()
	// Suspend refuses at once, before the write in flight has finished.
	deadline := time.Now().Add(10 * time.Second)
	for {
		end, err := g.BeginWrite()
		if err == nil {
			end() // admitted before Suspend took effect
		} else {
			var se *SuspendingError
			if !errors.As(err, &se) || err.Error() != "sandbox sb-1 is suspending; retry after it resumes" {
				t.Fatalf("refusal %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes were still admitted after Suspend")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-suspended:
		t.Fatalf("Suspend returned (%v) while a write was in flight", err)
	default:
	}
	done()
	done() // a second call is harmless
	if err := <-suspended; err != nil {
		t.Fatalf("Suspend: %v", err)
	}
}

func TestWritesSuspendEndsWithItsContext(t *testing.T) {
	g := NewWrites("")
	if _, err := g.BeginWrite(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Suspend(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Suspend with a write stuck: %v, want the context's error", err)
	}
	if _, err := g.BeginWrite(); err == nil || err.Error() != "this sandbox is suspending; retry after it resumes" {
		t.Fatalf("refusal without a name: %v", err)
	}
}

func TestInterceptorGuardsOnlyTheWriteProcedures(t *testing.T) {
	g := NewWrites("sb")
	call := func(procedure string) error {
		next := connect.UnaryFunc(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
			return connect.NewResponse(&emptypb.Empty{}), nil
		})
		req := &fakeRequest{Request: connect.NewRequest(&emptypb.Empty{}), procedure: procedure}
		_, err := g.Interceptor("/svc/Write").WrapUnary(next)(context.Background(), req)
		return err
	}
	if err := call("/svc/Write"); err != nil {
		t.Fatalf("a write before Suspend: %v", err)
	}
	if err := g.Suspend(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := call("/svc/Write"); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("a write after Suspend: %v, want unavailable", err)
	}
	if err := call("/svc/Read"); err != nil {
		t.Fatalf("a read after Suspend: %v", err)
	}
}

// fakeRequest gives a request the procedure an interceptor sees.
type fakeRequest struct {
	*connect.Request[emptypb.Empty]
	procedure string
}

func (r *fakeRequest) Spec() connect.Spec { return connect.Spec{Procedure: r.procedure} }
