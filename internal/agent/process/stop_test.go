package process

import (
	"context"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/kubox-dev/kubox/internal/agent/process/proctest"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// testStopGrace is the grace period of these tests: long enough for a shell to run its trap.
const testStopGrace = 300 * time.Millisecond

// A command the agent ends itself, at its timeout or when the call that ran it ended, is ended
// gracefully: SIGTERM to its process group, then SIGKILL to the group after the grace period, also
// when the group's leader is gone by then and only a child that ignores SIGTERM is left (which,
// re-parented to the agent, is reaped). The exit is the leader's, marked timed out for a timeout.
func TestTheAgentEndsAProcessGroupGracefully(t *testing.T) {
	cases := map[string]struct {
		leaderStays bool
		end         string // "timeout" or "cancel"
		want        ExitStatus
	}{
		"timeout, the shell exits on SIGTERM": {end: "timeout", want: ExitStatus{Code: 3, TimedOut: true}},
		"timeout, the shell ignores SIGTERM": {end: "timeout", leaderStays: true,
			want: ExitStatus{Code: 128 + int(syscall.SIGKILL), Signal: syscall.SIGKILL, TimedOut: true}},
		"the call ended, the shell exits on SIGTERM": {end: "cancel", want: ExitStatus{Code: 3}},
		"the call ended, the shell ignores SIGTERM": {end: "cancel", leaderStays: true,
			want: ExitStatus{Code: 128 + int(syscall.SIGKILL), Signal: syscall.SIGKILL}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newManager(t, Options{StopGrace: testStopGrace})
			script := proctest.NewStubborn(t, tc.leaderStays)
			before := m.reaper.orphanCount()
			var p *Process
			switch tc.end {
			case "timeout":
				// A timeout far off, brought forward once the script is ready: the timer's own path.
				p = mustStart(t, m, Spec{Argv: script.Argv(), Timeout: time.Hour})
				script.Ready(t)
				p.timer.Reset(0)
				script.AssertEndedGracefully(t)
			case "cancel":
				ctx, cancel := context.WithCancel(guardCtx(t))
				errc := make(chan error, 1)
				go func() {
					_, err := m.Run(ctx, Spec{Argv: script.Argv(), Tag: "cancel-me"}, nil, 0)
					errc <- err
				}()
				script.Ready(t)
				p = byTag(t, m, "cancel-me")
				cancel()
				wantCode(t, <-errc, connect.CodeCanceled, "the call ended")
				script.AssertEndedGracefully(t)
			}
			if diff := cmp.Diff(tc.want, exitOf(t, p), cmpopts.IgnoreFields(ExitStatus{}, "At")); diff != "" {
				t.Errorf("exit (-want +got):\n%s", diff)
			}
			if !tc.leaderStays {
				if got := m.reaper.orphanCount(); got <= before {
					t.Errorf("orphans reaped = %d, want more than %d: the child outlived its shell and was not reaped by the agent", got, before)
				}
			}
		})
	}
}

// byTag finds the process started with tag.
func byTag(t *testing.T, m *Manager, tag string) *Process {
	t.Helper()
	for _, info := range m.List(false) {
		if info.Tag == tag {
			p, err := m.Get(info.ID)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no running process tagged %q", tag)
	return nil
}

// On kubox's own ProcessService the same holds over the wire: RunProcess and StartProcess with a
// timeout report the leader's exit marked timed_out, and a RunProcess whose caller went away ends
// its command the same way. (A StartProcess stream that ends leaves its process running, to be
// attached again: the wire has no cancel.)
func TestTheProcessServiceEndsACommandGracefully(t *testing.T) {
	cases := map[string]struct {
		run      func(t *testing.T, c agentv1connect.ProcessServiceClient, s proctest.Stubborn) (*agentv1.ProcessExit, error)
		want     *agentv1.ProcessExit
		wantCode connect.Code
	}{
		"RunProcess's timeout": {
			run: func(t *testing.T, c agentv1connect.ProcessServiceClient, s proctest.Stubborn) (*agentv1.ProcessExit, error) {
				res, err := c.RunProcess(guardCtx(t), connect.NewRequest(&agentv1.RunProcessRequest{
					Spec: &agentv1.ProcessSpec{Argv: s.Argv(), Timeout: durationpb.New(2 * time.Second)}}))
				return res.Msg.GetExit(), err
			},
			want: &agentv1.ProcessExit{ExitCode: 3, TimedOut: true},
		},
		"StartProcess's timeout": {
			run: func(t *testing.T, c agentv1connect.ProcessServiceClient, s proctest.Stubborn) (*agentv1.ProcessExit, error) {
				stream, err := c.StartProcess(guardCtx(t), connect.NewRequest(&agentv1.StartProcessRequest{
					Spec: &agentv1.ProcessSpec{Argv: s.Argv(), Timeout: durationpb.New(2 * time.Second)}}))
				if err != nil {
					return nil, err
				}
				_, _, _, exit := summary(streamEvents(t, stream))
				return exit, nil
			},
			want: &agentv1.ProcessExit{ExitCode: 3, TimedOut: true},
		},
		"the RunProcess call ended": {
			run: func(t *testing.T, c agentv1connect.ProcessServiceClient, s proctest.Stubborn) (*agentv1.ProcessExit, error) {
				ctx, cancel := context.WithCancel(guardCtx(t))
				errc := make(chan error, 1)
				go func() {
					_, err := c.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: s.Argv()}}))
					errc <- err
				}()
				s.Ready(t)
				cancel()
				return nil, <-errc
			},
			wantCode: connect.CodeCanceled,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := newManager(t, Options{StopGrace: testStopGrace})
			client := clients(t, newTestServer(t, m))["connect-proto-http1"].client
			s := proctest.NewStubborn(t, false)
			exit, err := tc.run(t, client, s)
			if (err != nil || tc.wantCode != 0) && connect.CodeOf(err) != tc.wantCode {
				t.Fatalf("the call ended with %v, want code %v", err, tc.wantCode)
			}
			s.AssertEndedGracefully(t)
			if diff := cmp.Diff(tc.want, exit, protocmp.Transform(), protocmp.IgnoreFields(&agentv1.ProcessExit{}, "exited_at")); diff != "" {
				t.Errorf("exit (-want +got):\n%s", diff)
			}
		})
	}
}
