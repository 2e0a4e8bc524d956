package e2b

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/internal/router/httperr"
	"github.com/kubox-dev/kubox/internal/router/wake"
)

// TestE2BWaitLooksOnlyOnEvents: E2B's waits (pause, resume, kill) look at the cache when the
// informers say something changed, not on a timer: with no event, the check runs once; an event
// on the claim makes it look again.
func TestE2BWaitLooksOnlyOnEvents(t *testing.T) {
	a := &API{cfg: Config{WakeTimeout: 300 * time.Millisecond}, deps: Deps{Events: wake.NewEvents()}}
	var looks atomic.Int32
	check := func(context.Context) (bool, *httperr.Error) { return looks.Add(1) == 2, nil }
	timedOut := func() *httperr.Error { return httperr.Errorf(http.StatusGatewayTimeout, "timed out") }
	if herr := a.awaitE2B(context.Background(), check, timedOut, objectKey("ns", "claim")); herr == nil || herr.Code != http.StatusGatewayTimeout {
		t.Fatalf("wait = %v; want its timeout", herr)
	}
	if n := looks.Load(); n != 1 {
		t.Errorf("the check ran %d times while nothing changed in the cache; want 1 (no poll)", n)
	}
	looked := make(chan int32)
	check = func(context.Context) (bool, *httperr.Error) { n := looks.Add(1); looked <- n; return n == 2, nil }
	looks.Store(0)
	a.cfg.WakeTimeout = time.Hour
	done := make(chan *httperr.Error)
	go func() { done <- a.awaitE2B(t.Context(), check, timedOut, objectKey("ns", "claim")) }()
	<-looked
	a.deps.Events.Notify(objectKey("ns", "other")) // not the claim's: no look
	a.deps.Events.Notify(objectKey("ns", "claim"))
	if n := <-looked; n != 2 {
		t.Errorf("look %d after the claim's event; want the second", n)
	}
	if herr := <-done; herr != nil {
		t.Fatalf("wait after the claim's event = %v; want done", herr)
	}
}
