// Package sandboxtemplate tests the SandboxTemplate controller against a real kube-apiserver and
// etcd. Every test starts the production controller wiring (all controllers, the field indexes,
// the label-scoped caches) in a namespace of its own, with the default configuration unless the
// test is about the configuration. There is no garbage collector: tests check the owner
// references it would follow, and delete objects themselves where it would.
package sandboxtemplate

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env) }
