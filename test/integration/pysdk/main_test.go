// Package pysdk runs the Python SDK's integration tests (sdk/python/tests/integration, pytest)
// against a real environment that this package brings up in a namespace of the shared test API
// server: a real kube-apiserver and etcd, every kubox controller running as kubox-controller runs
// them (with an agent image and token key), and a real kubox-router in the test process. The
// framework's Kubelet starts every Pod Running and Ready with a loopback IP of its own
// (127.0.1.1, 127.0.1.2, ...), where a real kubox-agent, started in-process once the Sandbox
// reports that IP, serves the agent port with the token the controller derived for the Sandbox,
// its files in a temporary root. Pods of the image kubox.local/never-starts:dev stay Pending.
//
// pytest runs as a subprocess of /usr/bin/python3 (`make python-deps` installs it and the SDK's
// dependencies), with the SDK from sdk/python/src and a kubeconfig for a ServiceAccount allowed
// to claim and connect to sandboxes; pysdk_test.go lists the environment variables that describe
// the rest.
package pysdk

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
