// Command kubox-node is kubox's component on each gVisor node: it checkpoints the gVisor sandboxes
// of the Pods running there into snapshots (memory, processes, open files, root filesystem
// writes) below its snapshot root, where kubox's patched gVisor shim restores new Pods from them,
// and removes snapshots. It serves proto/kubox/node/v1's SnapshotService to callers with the node
// token. It runs as root on the node, beside containerd: in a cluster as a DaemonSet with the
// host's PID and mount namespaces, and as a host process of `kubox dev up` on the local node.
// Its flags and start-up are in internal/node/cli; see docs/checkpoint.md.
package main

import (
	"fmt"
	"os"

	"github.com/kubox-dev/kubox/internal/node/cli"
)

func main() {
	if err := cli.NewCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "kubox-node: %v\n", err)
		os.Exit(1)
	}
}
