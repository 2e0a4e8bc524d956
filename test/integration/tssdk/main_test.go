// Package tssdk runs the TypeScript SDK's integration tests (sdk/typescript/src/test/
// cluster.test.ts, node --test) against a real environment that test/integration/clientenv
// brings up in a namespace of the shared test API server. `make test-ts` installs the SDK's npm
// dependencies and builds it (dist/) first.
package tssdk

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
