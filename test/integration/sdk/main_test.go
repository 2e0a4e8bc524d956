// Package sdk tests the Go SDK (sdk/go/kubox), and `kubox mcp`'s HTTP endpoint built on it,
// against a real kube-apiserver and etcd, with every kubox controller running as
// kubox-controller runs them, in a namespace per test. The framework's
// Kubelet starts every Pod Running and Ready with the IP 127.0.0.1, where a real kubox-agent,
// started in-process once the sandbox's UID is known, serves the sandbox's agent port with the
// token the controller derived for it. The SDK connects directly (ConnectDirect): Pod IP from the
// Sandbox's status, token from its Secret.
package sdk

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
