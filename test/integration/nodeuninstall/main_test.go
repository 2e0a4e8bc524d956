// Package nodeuninstall tests "kubox-node uninstall"'s check for the Pods that run on kubox's
// runtime handler against a real kube-apiserver and etcd: the field selector the API server
// applies, and the RBAC of config/node/uninstall as the ServiceAccount it grants.
package nodeuninstall

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env) }
