package kubox

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start agents, process followers and watches: none may outlive them, except the
// agent's process-wide reaper and klog's flush daemon, which live as long as the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("github.com/kubox-dev/kubox/internal/agent/process.(*reaper).loop"))
}
