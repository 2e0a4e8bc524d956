package e2b_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/agent/process/proctest"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
)

// testStopGrace is the agent's grace period between SIGTERM and SIGKILL in these tests.
const testStopGrace = 300 * time.Millisecond

// envd's only timeout is the Start call's own (Connect-Timeout-Ms, grpc-timeout): when it passes,
// the command is ended gracefully, as on the agent's other process APIs: SIGTERM to its process
// group, SIGKILL to the group after the grace period (which reaches the child that ignores
// SIGTERM once its shell has exited), and no zombie is left. A Start stream that ends without a
// timeout leaves its command running, as envd does (E2B's background commands).
func TestStartsTimeoutEndsTheCommandGracefully(t *testing.T) {
	s := startSandbox(t)
	script := proctest.NewStubborn(t, false)
	// Long enough for sh to set its trap first; the test never measures it.
	ctx, cancel := context.WithTimeout(guardCtx(t), 2*time.Second)
	defer cancel()
	argv := script.Argv()
	stream, err := s.proc.Start(ctx, connect.NewRequest(&envdprocess.StartRequest{
		Process: &envdprocess.ProcessConfig{Cmd: argv[0], Args: argv[1:]}}))
	if err != nil {
		t.Fatal(err)
	}
	for stream.Receive() {
	}
	if code := connect.CodeOf(stream.Err()); code != connect.CodeDeadlineExceeded {
		t.Errorf("the Start stream ended with %v, want deadline_exceeded", stream.Err())
	}
	script.AssertEndedGracefully(t)
}
