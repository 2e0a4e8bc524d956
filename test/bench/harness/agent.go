package harness

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// RunTrue runs `true` through a kubox-agent's RunProcess and returns how long the round trip
// took; an error or a non-zero exit fails it.
func RunTrue(ctx context.Context, c agentv1connect.ProcessServiceClient) (time.Duration, error) {
	req := &agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"true"}}}
	start := time.Now()
	res, err := c.RunProcess(ctx, connect.NewRequest(req))
	if err != nil {
		return 0, fmt.Errorf("RunProcess true: %w", err)
	}
	if code := res.Msg.GetExit().GetExitCode(); code != 0 {
		return 0, fmt.Errorf("true exited with %d", code)
	}
	return time.Since(start), nil
}
