// Package api tests the Sandbox CRD itself against a real API server: its defaults, its CEL and
// schema validation, and what kubectl shows of it. No controller runs.
package api

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env) }
