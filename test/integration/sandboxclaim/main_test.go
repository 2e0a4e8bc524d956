// Package sandboxclaim tests the SandboxClaim controller against a real kube-apiserver and etcd,
// with every kubox controller running as kubox-controller runs them (manager.SetupReconcilers:
// Sandbox, SandboxTemplate, SandboxWarmPool and SandboxClaim), in a namespace per test. The tests
// play the kubelet (a goroutine marks each new Pod Running and Ready with an IP) and, for claims
// with settings, the sandboxes' kubox-agents, and check owner references where a garbage
// collector, which the test API server does not run, would delete.
package sandboxclaim

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
