// Command kubox-agent runs inside a sandbox's container and serves it: processes (run, stream,
// stdin, signals, terminals), files, and agent-sandbox's runtime APIs. The controller makes it
// the container's entry point; it runs the container's own command as its child. Its flags and
// start-up are in internal/agent/cli; see docs/agent.md.
package main

import (
	"fmt"
	"os"

	"github.com/kubox-dev/kubox/internal/agent/cli"
)

func main() {
	if err := cli.NewCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "kubox-agent: %v\n", err)
		os.Exit(1)
	}
}
