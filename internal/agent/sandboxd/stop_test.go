package sandboxd

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/agent/process/proctest"
	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
)

// testStopGrace is the process manager's grace period between SIGTERM and SIGKILL in these tests.
const testStopGrace = 300 * time.Millisecond

// Whatever ends a command on sandboxd's API short of a client's SendSignal (Execute's time limit,
// the end of the Execute call, the end of a Start stream) ends it as sandboxd v1.0.13 does:
// SIGTERM to the process group, SIGKILL to the group after the grace period (which reaches the
// child that ignores SIGTERM, also once its shell is gone), and no zombie is left.
func TestACommandIsEndedGracefully(t *testing.T) {
	cases := map[string]struct {
		opts ProcessOptions
		// run runs the script and, once it is ready, ends it; it returns the call's error.
		run func(t *testing.T, f *fixture, s proctest.Stubborn) error
		// wantCode is the code of the call's error.
		wantCode connect.Code
	}{
		"Execute's time limit": {
			// Long enough for sh to set its trap first; the test never measures it.
			opts: ProcessOptions{ExecuteTimeout: 2 * time.Second},
			run: func(t *testing.T, f *fixture, s proctest.Stubborn) error {
				_, err := f.procs.Execute(guardCtx(t), connect.NewRequest(&processv1.ExecuteRequest{Config: config(s.Argv()...)}))
				return err
			},
			wantCode: connect.CodeDeadlineExceeded,
		},
		"the Execute call ended": {
			run: func(t *testing.T, f *fixture, s proctest.Stubborn) error {
				ctx, cancel := context.WithCancel(guardCtx(t))
				errc := make(chan error, 1)
				go func() {
					_, err := f.procs.Execute(ctx, connect.NewRequest(&processv1.ExecuteRequest{Config: config(s.Argv()...)}))
					errc <- err
				}()
				s.Ready(t)
				cancel()
				return <-errc
			},
			wantCode: connect.CodeCanceled,
		},
		"the Start stream ended": {
			run: func(t *testing.T, f *fixture, s proctest.Stubborn) error {
				ctx, cancel := context.WithCancel(guardCtx(t))
				f.start(t, ctx, &processv1.StartRequest{Config: config(s.Argv()...)})
				s.Ready(t)
				cancel()
				return nil
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			s := proctest.NewStubborn(t, false)
			if err := tc.run(t, f, s); codeOf(err) != tc.wantCode {
				t.Fatalf("the call ended with %v (code %v), want code %v", err, codeOf(err), tc.wantCode)
			}
			s.AssertEndedGracefully(t)
		})
	}
}
