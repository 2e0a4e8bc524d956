// Package usage tests usage metering against a real kube-apiserver and etcd, with the records
// written to a real S3 server (SeaweedFS, only with $KUBOX_SEAWEEDFS).
package usage

import (
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env) }
