package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// terminal is the local terminal of an interactive exec: raw mode while the remote process runs,
// its size, and its resizes.
type terminal struct {
	in    *os.File // the terminal stdin reads from
	size  *os.File // the terminal whose size the remote pseudo-terminal gets
	state *term.State
}

// withFd runs fn with file's descriptor. Unlike os.File.Fd it leaves the file in non-blocking
// mode, so that a read of it can still be stopped with a deadline (see stdinForwarder.stop).
func withFd(file *os.File, fn func(fd int)) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// openTerminal finds the terminal of stdin and stdout; ok is false when stdin is no terminal.
func openTerminal(stdin io.Reader, stdout io.Writer) (*terminal, bool) {
	if !isTerminal(stdin) {
		return nil, false
	}
	in := stdin.(*os.File)
	t := &terminal{in: in, size: in}
	if isTerminal(stdout) {
		t.size = stdout.(*os.File)
	}
	return t, true
}

// makeRaw puts the terminal in raw mode: keys, Ctrl-C included, go to the remote process as they
// are typed. restore undoes it.
func (t *terminal) makeRaw() error {
	var st *term.State
	var err error
	if cerr := withFd(t.in, func(fd int) { st, err = term.MakeRaw(fd) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	t.state = st
	return nil
}

func (t *terminal) restore() {
	if t.state != nil {
		_ = withFd(t.in, func(fd int) { _ = term.Restore(fd, t.state) })
		t.state = nil
	}
}

// ttySize is the terminal's size, or 24x80 when it cannot be read.
func (t *terminal) ttySize() kubox.TTYSize {
	var cols, rows int
	err := errors.New("no terminal")
	_ = withFd(t.size, func(fd int) { cols, rows, err = term.GetSize(fd) })
	if err != nil || rows <= 0 || cols <= 0 {
		return kubox.TTYSize{Rows: 24, Cols: 80}
	}
	return kubox.TTYSize{Rows: uint16(rows), Cols: uint16(cols)}
}

// followResizes sends the terminal's size to resize on every SIGWINCH until ctx ends.
func (t *terminal) followResizes(ctx context.Context, resize func(context.Context, kubox.TTYSize) error) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	last := t.ttySize()
	for {
		select {
		case <-ctx.Done():
			return
		case <-winch:
			if size := t.ttySize(); size != last {
				last = size
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_ = resize(rctx, size) // the next resize tries again
				cancel()
			}
		}
	}
}

// stdinForwarder copies kubox's stdin to the reader the SDK sends to the remote process, and
// can stop: a terminal has nothing to read once the remote process is gone, and the SDK's copy
// must not wait on it.
type stdinForwarder struct {
	src io.Reader
	pr  *io.PipeReader
	pw  *io.PipeWriter
}

// forwardStdin starts copying src. Read from the returned forwarder; stop it when done.
func forwardStdin(src io.Reader) *stdinForwarder {
	pr, pw := io.Pipe()
	f := &stdinForwarder{src: src, pr: pr, pw: pw}
	go func() {
		_, err := io.Copy(pw, src)
		_ = pw.CloseWithError(err) // nil: the remote process sees the end of its input
	}()
	return f
}

func (f *stdinForwarder) Read(p []byte) (int, error) { return f.pr.Read(p) }

// stop ends the copy: the SDK's reads fail at once, and a read of a file that can have deadlines
// (a terminal opened by path, a pipe) returns, so that the copy's goroutine ends too. A plain
// os.Stdin read stays blocked until the next input, which does not matter to a process that is
// about to exit.
func (f *stdinForwarder) stop() {
	_ = f.pr.CloseWithError(errStdinClosed)
	if file, ok := f.src.(*os.File); ok {
		_ = file.SetReadDeadline(time.Now())
	}
}

var errStdinClosed = errors.New("the remote process has exited")
