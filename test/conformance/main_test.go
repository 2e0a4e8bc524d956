package conformance

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The agent's process reaper lives as long as the OS process, by design.
		goleak.IgnoreTopFunction("github.com/kubox-dev/kubox/internal/agent/process.(*reaper).loop"),
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreAnyFunction("os/signal.loop"),
	)
}
