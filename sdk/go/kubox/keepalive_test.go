package kubox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"k8s.io/client-go/rest"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// fakeAgent counts ListProcesses calls and answers them with err (nil: success).
type fakeAgent struct {
	agentv1connect.UnimplementedProcessServiceHandler
	calls atomic.Int32
	err   error
}

func (f *fakeAgent) ListProcesses(context.Context, *connect.Request[agentv1.ListProcessesRequest]) (*connect.Response[agentv1.ListProcessesResponse], error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return connect.NewResponse(&agentv1.ListProcessesResponse{}), nil
}

// routedSandbox is a Sandbox reached through a fake router that serves agent at
// /sandboxes/ns/sb/.
func routedSandbox(t *testing.T, agent *fakeAgent) *Sandbox {
	t.Helper()
	path, h := agentv1connect.NewProcessServiceHandler(agent)
	mux := http.NewServeMux()
	mux.Handle("/sandboxes/ns/sb"+path, http.StripPrefix("/sandboxes/ns/sb", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: "http://127.0.0.1:1", BearerToken: "tok"}, Options{Connection: ConnectRouter, RouterURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &Sandbox{c: c, ns: "ns", name: "sb", obj: &sandboxv1beta1.Sandbox{}}
}

func TestKeepAliveCallsTheAgentEveryIntervalUntilTheContextEnds(t *testing.T) {
	agent := &fakeAgent{}
	sb := routedSandbox(t, agent)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sb.KeepAlive(ctx, MinKeepAliveInterval) }()
	deadline := time.Now().Add(30 * time.Second)
	for agent.calls.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls; want one at once and one per interval", agent.calls.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("KeepAlive after its context ended: %v, want nil", err)
	}
	n := agent.calls.Load()
	time.Sleep(2 * MinKeepAliveInterval)
	if agent.calls.Load() != n {
		t.Error("KeepAlive kept calling after it returned")
	}
}

func TestKeepAliveStopsWhenTheSandboxIsGone(t *testing.T) {
	sb := routedSandbox(t, &fakeAgent{err: connect.NewError(connect.CodeNotFound, errors.New("no such sandbox"))})
	err := sb.KeepAlive(t.Context(), time.Hour)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("KeepAlive on a deleted sandbox: %v, want ErrNotFound", err)
	}
}

func TestKeepAliveRetriesATransientFailure(t *testing.T) {
	agent := &fakeAgent{err: connect.NewError(connect.CodeInternal, errors.New("hiccup"))}
	sb := routedSandbox(t, agent)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sb.KeepAlive(ctx, MinKeepAliveInterval) }()
	for deadline := time.Now().Add(30 * time.Second); agent.calls.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("KeepAlive gave up after a transient failure")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
}

func TestKeepAliveRefusesATinyInterval(t *testing.T) {
	sb := routedSandbox(t, &fakeAgent{})
	if err := sb.KeepAlive(t.Context(), time.Millisecond); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Fatalf("KeepAlive(1ms) = %v, want an error about the interval", err)
	}
}
