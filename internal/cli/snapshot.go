package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

type snapshotOptions struct {
	target
	filesystemOnly bool
}

func newSnapshot(g *globalOptions) *cobra.Command {
	o := &snapshotOptions{}
	cmd := &cobra.Command{
		Use:   "snapshot NAME",
		Short: "Snapshot a running sandbox's memory and files, leaving it running",
		Long: `Snapshot the Sandbox NAME (with --claim, the sandbox of the claim NAME): create a
SandboxSnapshot of it, which kubox-node on its node takes with gVisor's checkpoint while the
sandbox keeps running (its processes pause for the checkpoint), and wait until it is Ready. It
prints the snapshot's name, size and checksum.

With --filesystem-only the snapshot holds the writes to the sandbox's root filesystems and
emptyDir volumes, not its processes and memory (spec.type Filesystem): a sandbox started from it
runs its processes afresh on those files (packages installed, files written). It is smaller and
quicker to take.

Sandboxes whose spec.snapshotRef names the snapshot start from it: kubox fork makes such forks,
kubox claim --snapshot claims one, and a SandboxTemplate with snapshotRef makes a warm pool of
them. Delete it with kubectl delete sandboxsnapshot NAME, which deletes its files from the node.
Needs gVisor (a runtimeClassName whose handler is runsc) and kubox-node.`,
		Example: `  kubox snapshot python-x7k2q
  kubox snapshot --claim kubox-x7k2
  kubox snapshot python-x7k2q --filesystem-only`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(g, &o.target, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, sb, err := g.openSandbox(cmd.Context(), o.target, args[0])
			if err != nil {
				return err
			}
			defer s.close()
			var opts []kubox.SnapshotOption
			if o.filesystemOnly {
				opts = append(opts, kubox.FilesystemOnly())
			}
			p := startProgress(cmd.ErrOrStderr(), "sandbox "+sb.Name()+": taking a snapshot")
			snap, err := sb.Snapshot(cmd.Context(), opts...)
			p.finish("")
			if err != nil {
				return err
			}
			cmd.Println(describeSnapshot(snap))
			return nil
		},
	}
	o.addFlag(cmd.Flags())
	cmd.Flags().BoolVar(&o.filesystemOnly, "filesystem-only", false,
		"save the sandbox's files only, not its processes and memory (sandboxes started from it run afresh on the files)")
	return cmd
}

// describeSnapshot is one line about a Ready snapshot.
func describeSnapshot(snap *extv1beta1.SandboxSnapshot) string {
	st := snap.Status.Snapshot
	where := "on node " + st.NodeName
	if st.Stored {
		where += " and in the snapshot store"
	}
	what := "snapshot"
	if snap.FilesystemOnly() {
		what = "filesystem snapshot"
	}
	return fmt.Sprintf("%s %s of sandbox %s: %.1f MiB %s, taken in %s, sha256 %s",
		what, snap.Name, snap.Spec.SandboxRef.Name, float64(st.SizeBytes)/(1<<20), where, st.Duration.Duration, st.SHA256)
}

type forkOptions struct {
	target
	count int
}

func newFork(g *globalOptions) *cobra.Command {
	o := &forkOptions{}
	cmd := &cobra.Command{
		Use:   "fork NAME",
		Short: "Start sandboxes that continue from a running sandbox's memory",
		Long: `Fork the Sandbox NAME (with --claim, the sandbox of the claim NAME): snapshot it as kubox
snapshot does, then create --count new Sandboxes from the snapshot and wait until all are Ready. Each
continues from the same memory — a Python variable, a loaded model, a running loop — and then goes
its own way, with its own name (NAME-fork-xxxxx), agent token, Service and Pod IP; NAME keeps
running. The forks run on the node that holds the snapshot. Delete them with kubox delete.`,
		Example: `  kubox fork python-x7k2q --count 3
  kubox fork --claim kubox-x7k2`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(g, &o.target, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.count < 1 {
				return fmt.Errorf("--count is %d; want at least 1 fork", o.count)
			}
			s, sb, err := g.openSandbox(cmd.Context(), o.target, args[0])
			if err != nil {
				return err
			}
			defer s.close()
			p := startProgress(cmd.ErrOrStderr(), fmt.Sprintf("sandbox %s: forking %d", sb.Name(), o.count))
			forks, err := sb.Fork(cmd.Context(), o.count)
			p.finish("")
			if err != nil {
				return err
			}
			for _, f := range forks {
				cmd.Println(f.Name())
			}
			return nil
		},
	}
	o.addFlag(cmd.Flags())
	cmd.Flags().IntVar(&o.count, "count", 1, "how many forks to start")
	return cmd
}
