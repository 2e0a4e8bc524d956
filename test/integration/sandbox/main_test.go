// Package sandbox tests the Sandbox controller against a real kube-apiserver and etcd. Every test
// starts the controller in a namespace of its own, the way kubox-controller registers it (field
// indexes, label-scoped and trimmed caches), and plays the kubelet, scheduler and garbage collector
// itself: it writes Pod status, binds Pods to nodes, and checks owner references where a garbage
// collector would delete.
package sandbox

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }
