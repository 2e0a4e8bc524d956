// Package audit tests kubox-router's audit trail against a real kube-apiserver and etcd: the
// router runs in the test process on 127.0.0.1, its sandboxes' "pods" are real kubox-agents (or
// fake agents, in the attack tests) on 127.0.0.1, and each test writes its Sandboxes' status
// itself. Records go to an in-memory sink, and to a real S3 server (SeaweedFS) when
// KUBOX_SEAWEEDFS is set.
package audit

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
