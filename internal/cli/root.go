// Package cli implements the kubox command line for people and agents. Each command parses flags and calls into the
// package that does the work: internal/devenv for `kubox dev`, the Go SDK (sdk/go/kubox) for the
// commands that claim sandboxes and run commands and copy files in them, and the API server
// directly for listing, suspending, resuming and deleting them and for their logs.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/internal/version"
)

// NewCommand returns the `kubox` command with every subcommand. cmd/kubox runs it with Execute,
// which maps errors to exit codes.
func NewCommand() *cobra.Command {
	g := newGlobalOptions()
	root := &cobra.Command{
		Use:   "kubox",
		Short: "kubox runs AI-agent sandboxes on Kubernetes",
		Long: `kubox runs AI-agent sandboxes on Kubernetes, isolated by gVisor, and is wire-compatible
with kubernetes-sigs/agent-sandbox.

Claim a sandbox from a warm pool or a template, run commands in it, copy files in and out, and
release it. kubox finds the cluster as kubectl does (--kubeconfig, KUBECONFIG, --context, -n) and
reaches the sandboxes' agents through kubox-router (--router-url, or a port-forward to its
Service) or directly (--connection direct, inside the cluster).`,
		Example: `  kubox run --template python -- python3 -c 'print(6*7)'
  kubox claim --pool python --ttl 1h
  kubox exec -it --claim kubox-x7k2 -- bash
  kubox cp --claim ./data.csv kubox-x7k2:/work/data.csv
  kubox ls`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true, // Execute prints them, and passes remote exit codes through silently
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return g.validate()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	g.addFlags(root.PersistentFlags())
	registerGlobalCompletions(root, g)
	root.AddCommand(
		newClaim(g), newRun(g), newExec(g), newCp(g), newGet(g),
		newSuspend(g), newResume(g), newSnapshot(g), newFork(g), newDelete(g), newLogs(g), newAudit(g), newUsage(g), newToken(g), newMCP(g),
		newDev(),
	)
	return root
}
