// Command kubox-router takes clients outside the cluster to sandboxes: by path, by
// agent-sandbox's X-Sandbox-* headers, or by preview host, after checking who they are. Its
// flags and start-up are in internal/router/cli; see docs/router.md.
package main

import (
	"fmt"
	"os"

	"github.com/kubox-dev/kubox/internal/router/cli"
)

func main() {
	if err := cli.NewCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "kubox-router: %v\n", err)
		os.Exit(1)
	}
}
