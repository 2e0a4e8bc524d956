// Package cli tests the kubox command line against a real kube-apiserver and etcd, with every
// kubox controller running as kubox-controller runs them, in a namespace per test. The tests
// drive the real cobra command in-process (cli.Execute), as a user drives the binary: with a
// kubeconfig, -n and --connection direct.
//
// Claims, listings, suspension and deletion run against the framework's Kubelet. Commands that
// reach an agent (run, exec, cp) run against a real kubox-agent started in-process on 127.0.0.1
// once the sandbox's UID is known, with the token the controller derived for it; the framework's
// Kubelet then starts the sandbox's Pod, Running and Ready with the IP 127.0.0.1, so the CLI
// (through the SDK) reads the Pod IP from the Sandbox's status and the token from its Secret.
package cli

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
