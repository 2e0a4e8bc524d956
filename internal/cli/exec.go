package cli

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// interruptGrace is how long a remote process has to exit after kubox, interrupted, sends it
// SIGINT, before kubox stops following it.
const interruptGrace = 3 * time.Second

type execOptions struct {
	target
	stdin bool
	tty   bool
}

func newExec(g *globalOptions) *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec NAME [-i] [-t] -- CMD [ARGS...]",
		Short: "Run a command in a sandbox, with its output streamed, or interactively",
		Long: `Run CMD in the Sandbox NAME (with --claim, in the sandbox of the claim NAME), through its
kubox-agent. Its stdout and stderr stream to kubox's as they arrive, and kubox exits with its exit
code (128+n when signal n killed it).

-i forwards kubox's stdin to the command. -t runs it under a pseudo-terminal the size of yours,
which follows your terminal's resizes; with -i as well (-it) your terminal is in raw mode until
the command exits, so Ctrl-C and Ctrl-D go to the command. Without a terminal on stdin, -t is
ignored with a warning.

Ctrl-C without -t sends SIGINT to the command, stops following it after a moment, and exits
with 130.`,
		Example: `  # Output streamed, exit code passed through
  kubox exec python-x7k2q -- python3 -c 'import sys; print("hi"); sys.exit(3)'

  # An interactive shell in a claim's sandbox
  kubox exec -it --claim kubox-x7k2 -- bash

  # Feed a file to a command
  kubox exec -i python-x7k2q -- wc -l < data.csv`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(g, &o.target, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, argv, err := splitCommand("exec NAME", cmd.ArgsLenAtDash(), args)
			if err != nil {
				return err
			}
			return o.run(cmd, g, name, argv)
		},
	}
	o.addFlag(cmd.Flags())
	cmd.Flags().BoolVarP(&o.stdin, "stdin", "i", false, "forward stdin to the command")
	cmd.Flags().BoolVarP(&o.tty, "tty", "t", false, "run the command under a pseudo-terminal")
	return cmd
}

// splitCommand splits exec's arguments into NAME and the command after "--".
func splitCommand(usage string, dash int, args []string) (string, []string, error) {
	switch {
	case dash < 0:
		return "", nil, fmt.Errorf("kubox %s -- CMD [ARGS...]: put -- before the command, so that its flags stay its own", usage)
	case dash == 0:
		return "", nil, fmt.Errorf("kubox %s -- CMD [ARGS...]: NAME is missing before --", usage)
	case dash > 1:
		return "", nil, fmt.Errorf("kubox %s -- CMD [ARGS...]: one NAME before --, got %q", usage, args[:dash])
	case len(args) == 1:
		return "", nil, fmt.Errorf("kubox %s -- CMD [ARGS...]: the command after -- is missing", usage)
	}
	return args[0], args[1:], nil
}

func (o *execOptions) run(cmd *cobra.Command, g *globalOptions, name string, argv []string) error {
	ctx := cmd.Context()
	pc := kubox.Cmd{Args: argv, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
	var tty *terminal
	if o.tty {
		t, ok := openTerminal(cmd.InOrStdin(), cmd.OutOrStdout())
		if ok {
			tty = t
			size := t.ttySize()
			pc.TTY = &size
		} else {
			cmd.PrintErrln("warning: -t ignored: stdin is not a terminal")
		}
	}
	s, sb, err := g.openSandbox(ctx, o.target, name)
	if err != nil {
		return err
	}
	defer s.close()
	if o.stdin {
		in := forwardStdin(cmd.InOrStdin())
		defer in.stop()
		pc.Stdin = in
	}
	if tty != nil && o.stdin {
		if err := tty.makeRaw(); err != nil {
			return fmt.Errorf("putting the terminal in raw mode: %w", err)
		}
		defer tty.restore()
	}
	code, err := runProcess(ctx, sb, pc, func(ctx context.Context, p *kubox.Process) {
		if tty != nil {
			tty.followResizes(ctx, p.Resize)
		}
	})
	if err != nil {
		return explain(err, o.target, s.ns, name)
	}
	if code != 0 {
		return &exitCodeError{code: code}
	}
	return nil
}

// runProcess starts pc in sb, runs follow (when not nil) beside it until it exits, and returns
// its exit code once all its output is written. When ctx ends (Ctrl-C, SIGTERM), the process gets
// SIGINT and interruptGrace to exit; runProcess then returns ctx's error.
func runProcess(ctx context.Context, sb *kubox.Sandbox, pc kubox.Cmd, follow func(context.Context, *kubox.Process)) (int, error) {
	// The stream outlives ctx for a moment after an interrupt, to deliver the output of a
	// process that stops on SIGINT.
	streamCtx, cancelStream := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStream()
	p, err := sb.Start(streamCtx, pc)
	if err != nil {
		return 0, err
	}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := p.Wait()
		done <- result{code, err}
	}()
	followCtx, stopFollowing := context.WithCancel(streamCtx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		if follow != nil {
			follow(followCtx, p)
		}
	}()
	defer func() {
		stopFollowing()
		<-followed
	}()
	select {
	case r := <-done:
		return r.code, r.err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(streamCtx, interruptGrace)
	defer cancel()
	if err := p.Signal(sctx, syscall.SIGINT); err == nil {
		select {
		case <-done:
			return 0, ctx.Err()
		case <-sctx.Done():
		}
	}
	cancelStream()
	<-done
	return 0, ctx.Err()
}
