package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Exit codes of kubox itself. run and exec exit with the remote command's code instead (0-255;
// 128+n when signal n killed it), so a remote exit code 1 and a kubox error look the same to the
// caller; kubox's own errors are the ones printed as "error: ...".
const (
	// ExitOK: the command succeeded.
	ExitOK = 0
	// ExitError: kubox failed (bad flags, the object is missing, the cluster refused, ...).
	ExitError = 1
	// ExitInterrupted: kubox stopped on Ctrl-C or SIGTERM (128 + SIGINT), after cleaning up.
	ExitInterrupted = 130
)

// exitCodeError ends kubox with code without printing anything: the remote command's exit code,
// passed through by run and exec.
type exitCodeError struct {
	code int
}

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit code %d", e.code) }

// exitCode maps the error a command returned to kubox's exit code and the message to print
// ("" for none).
func exitCode(err error) (int, string) {
	var ec *exitCodeError
	switch {
	case err == nil:
		return ExitOK, ""
	case errors.As(err, &ec):
		return remoteExitCode(ec.code), ""
	case errors.Is(err, context.Canceled):
		return ExitInterrupted, "interrupted"
	}
	return ExitError, err.Error()
}

// remoteExitCode maps a remote process's exit code into what a process can exit with. The agent
// reports 0-255, and 128+n for a process killed by signal n; anything else (a negative code from
// an older agent that reports -n for signal n) is mapped the same way.
func remoteExitCode(code int) int {
	switch {
	case code >= 0 && code <= 255:
		return code
	case code < 0 && code >= -64:
		return 128 - code
	}
	return ExitError
}

// Execute runs kubox with args (os.Args[1:] in main) and returns the process's exit code. Errors
// are printed to stderr as "error: ...".
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	code, msg := exitCode(root.ExecuteContext(ctx))
	if msg != "" {
		fmt.Fprintln(stderr, "error: "+msg)
	}
	return code
}
