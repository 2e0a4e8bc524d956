// Package sandboxwarmpool tests the SandboxWarmPool controller against a real kube-apiserver and
// etcd. Every test starts kubox-controller's reconcilers (all of them, as in production) in a
// namespace of its own and plays the kubelet (it writes member Pods' status), the claim controller
// (it binds members with the contract's patch) and the garbage collector (it checks owner
// references where a garbage collector would delete).
package sandboxwarmpool

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env) }
