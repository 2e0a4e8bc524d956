// Package egress tests egress by domain against a real kube-apiserver and etcd: the admission of
// spec.egress (CEL), the controllers' wiring of sandboxes with egress (proxy variables, the
// egress CA, the NetworkPolicy, a claim's narrowing), and kubox-egress's policy source run in
// this process, learning a Pod's policy and credential from the API server, in front of
// loopback test servers whose made-up names a test resolver maps to 127.0.0.1.
package egress

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env) }
