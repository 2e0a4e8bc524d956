// Package sdk tests the Go SDK (sdk/go) against a real kube-apiserver and etcd, with every kubox
// controller running as kubox-controller runs them, in a namespace per test. The tests play the
// kubelet: every Pod becomes Running and Ready with the IP 127.0.0.1, where a real kubox-agent,
// started in-process once the sandbox's UID is known, serves the sandbox's agent port with the
// token the controller derived for it. The SDK connects directly (ConnectDirect): Pod IP from the
// Sandbox's status, token from its Secret.
package sdk

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	// The agents' child reaper is one goroutine per OS process that lives as long as the process;
	// start it before framework.Main notes the goroutines that may outlive the tests.
	if _, err := process.New(process.Options{}); err != nil {
		fmt.Fprintf(os.Stderr, "starting the agent's process reaper: %v\n", err)
		os.Exit(1)
	}
	framework.Main(m, &env)
}
