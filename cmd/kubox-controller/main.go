// Command kubox-controller runs kubox's controllers: it reconciles Sandboxes, SandboxTemplates,
// SandboxWarmPools and SandboxClaims, serves metrics and health probes, and exports traces when
// the OTLP environment variables ask for it (internal/tracing). Its flags and start-up are in
// internal/controller/cli; see docs/configuration.md.
package main

import (
	"fmt"
	"os"

	"github.com/kubox-dev/kubox/internal/controller/cli"
)

func main() {
	if err := cli.NewCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "kubox-controller: %v\n", err)
		os.Exit(1)
	}
}
