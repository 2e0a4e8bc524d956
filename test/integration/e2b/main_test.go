// Package e2b tests E2B's control API and sandbox hosts in kubox-router against a real
// kube-apiserver and etcd, with every kubox controller running, the router in process, and a
// real kubox-agent (with envd's port, contract.E2BEnvdPort) for each sandbox on a loopback Pod IP
// of its own. Requests go as E2B's SDKs send them: to api.{domain} and
// {port}-{sandboxID}.{domain}, every host dialed at the router's address.
package e2b

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
