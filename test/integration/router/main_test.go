// Package router tests kubox-router against a real kube-apiserver and etcd. The router runs in
// the test process on 127.0.0.1; its "pods" are real kubox-agents (or plain HTTP servers standing
// for a user's app) on 127.0.0.1, and each test writes its Sandboxes' status itself (pod IP
// 127.0.0.1, Ready=True): no controller runs. Kubernetes identities are ServiceAccounts with
// tokens from the TokenRequest API and RBAC Roles.
package router

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
