package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// releaseTimeout bounds the deletion of run's claim, which happens after ctx may have ended.
const releaseTimeout = 30 * time.Second

type runOptions struct {
	claimFlags
	keep  bool
	stdin bool
}

func newRun(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run (--pool POOL | --template TEMPLATE) [flags] -- CMD [ARGS...]",
		Short: "Claim a sandbox, run one command in it with its output streamed, and release it",
		Long: `Claim a sandbox from --pool or --template (as kubox claim does), run CMD in it with its stdout
and stderr streamed as they arrive, release the claim (its sandbox goes with it), and exit with
the command's exit code (0-255; 128+n when signal n killed it). kubox's own errors exit 1.

--keep keeps the claim and prints how to use and delete it. Ctrl-C sends SIGINT to the command,
releases the claim (unless --keep) and exits with 130.`,
		Example: `  kubox run --template python -- python3 -c 'print(6*7)'

  # Exit code passed through
  kubox run --pool python -- sh -c 'exit 3'; echo $?

  # Keep the sandbox for more commands
  kubox run --pool python --keep --ttl 1h -- pip install numpy

  # stdin forwarded
  echo 'print(1+1)' | kubox run --pool python -i -- python3`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check("run"); err != nil {
				return err
			}
			if cmd.ArgsLenAtDash() != 0 {
				return errors.New("kubox run (--pool POOL | --template TEMPLATE) -- CMD [ARGS...]: put -- before the command, so that its flags stay its own")
			}
			return o.run(cmd, g, args)
		},
	}
	o.addFlags(cmd, g)
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the claim and its sandbox after the command exits")
	cmd.Flags().BoolVarP(&o.stdin, "stdin", "i", false, "forward stdin to the command")
	return cmd
}

func (o *runOptions) run(cmd *cobra.Command, g *globalOptions, argv []string) (err error) {
	ctx := cmd.Context()
	s, err := g.connect()
	if err != nil {
		return err
	}
	defer s.close()
	name := newClaimName()
	// On failure or Ctrl-C while waiting, the SDK deletes the claim itself.
	sb, err := o.claimWithProgress(cmd, g, s, name)
	if err != nil {
		return err
	}
	defer func() {
		if o.keep {
			cmd.PrintErrf("claim %s kept with sandbox %s: run more with kubox exec --claim %s -- CMD; delete it with kubox delete --claim %s\n",
				name, sb.Name(), name, name)
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if rerr := sb.Close(rctx); rerr != nil {
			rerr = fmt.Errorf("releasing claim %s: %w: delete it with kubox delete --claim %s", name, rerr, name)
			if err != nil { // keep the command's exit code, and say what else failed
				cmd.PrintErrln("error: " + rerr.Error())
			} else {
				err = rerr
			}
		}
	}()
	pc := kubox.Cmd{Args: argv, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
	if o.stdin {
		in := forwardStdin(cmd.InOrStdin())
		defer in.stop()
		pc.Stdin = in
	}
	code, err := runProcess(ctx, sb, pc, nil)
	if err != nil {
		return explain(err, target{claim: true}, s.ns, name)
	}
	if code != 0 {
		return &exitCodeError{code: code}
	}
	return nil
}
