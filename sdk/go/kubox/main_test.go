package kubox

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start process followers and watches: none may outlive them, except klog's flush
// daemon, which lives as long as the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}
