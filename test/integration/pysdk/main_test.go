// Package pysdk runs the Python SDK's integration tests (sdk/python/tests/integration, pytest)
// against a real environment that test/integration/clientenv brings up in a namespace of the
// shared test API server.
//
// pytest runs as a subprocess of /usr/bin/python3 (`make python-deps` installs it and the SDK's
// dependencies), with the SDK from sdk/python/src and a kubeconfig for a ServiceAccount allowed
// to claim and connect to sandboxes.
package pysdk

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
