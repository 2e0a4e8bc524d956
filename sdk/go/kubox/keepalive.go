package kubox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

// MinKeepAliveInterval is the shortest interval KeepAlive accepts: the idle policy's shortest
// suspendAfter is 30s, so a few seconds is always often enough.
const MinKeepAliveInterval = time.Second

// KeepAlive holds a sandbox with an idle policy awake while the program works without sending it
// requests (between the steps of an agent, say): it calls the agent's cheap ListProcesses at
// once and then every interval until ctx ends, and returns nil then. Each call is a request
// through kubox-router and to kubox-agent, so both count it as activity; an interval below half
// of the policy's suspendAfter keeps the sandbox from suspending. A call that fails is tried
// again at the next tick, except when the sandbox is gone or the credentials are refused
// (ErrNotFound, ErrUnauthorized, ErrForbidden): then KeepAlive returns that error. Like any
// request through the router, a call wakes the sandbox if it is suspended and its idle policy
// wakes on request. Run it on its own goroutine:
//
//	ctx, stop := context.WithCancel(ctx)
//	defer stop()
//	go sb.KeepAlive(ctx, time.Minute)
func (s *Sandbox) KeepAlive(ctx context.Context, interval time.Duration) error {
	if interval < MinKeepAliveInterval {
		return fmt.Errorf("kubox: KeepAlive's interval %s is below %s; use, say, a third of the idle policy's suspendAfter",
			interval, MinKeepAliveInterval)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := s.touch(ctx); err != nil && ctx.Err() == nil && final(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// touch makes one request to the sandbox's agent.
func (s *Sandbox) touch(ctx context.Context) error {
	ep, err := s.endpoint(ctx)
	if err != nil {
		return err
	}
	if _, err := ep.process().ListProcesses(ctx, connect.NewRequest(&agentv1.ListProcessesRequest{})); err != nil {
		return wrapCallError(err, s.object())
	}
	return nil
}

// final says whether KeepAlive should stop trying after err.
func final(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden)
}
