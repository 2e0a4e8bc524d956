// Package sandboxsnapshot tests the SandboxSnapshot controller against a real kube-apiserver and
// etcd, with a real kubox-node API server (package internal/node/server) on 127.0.0.1 whose
// snapshot root and snapshot store (a folder, store.Dir) are folders of the test: what the
// controller deletes through kubox-node is deleted from those folders. Taking a snapshot needs
// runsc, so the tests write a taken snapshot's status themselves, as kubox-node's answer would
// have made it.
package sandboxsnapshot

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env) }
