// Package cli implements the kubox command line. Each command parses flags and calls into the
// package that does the work (internal/devenv for `kubox dev`).
package cli

import (
	"github.com/spf13/cobra"
)

// NewRoot returns the `kubox` command with every subcommand.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubox",
		Short: "kubox runs AI-agent sandboxes on Kubernetes",
		Long: `kubox runs AI-agent sandboxes on Kubernetes, isolated by gVisor, and is wire-compatible
with kubernetes-sigs/agent-sandbox.`,
		SilenceUsage: true,
	}
	root.AddCommand(newDev())
	return root
}
