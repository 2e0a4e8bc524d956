package kubox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// stdinChunk is the most stdin one SendInput call carries (the agent takes up to 8 MiB).
const stdinChunk = 64 << 10

// reattachLimit is how many times a Process follows its process again (AttachProcess) after its
// stream broke before the process exited.
const reattachLimit = 3

// killGrace bounds the SIGKILL a Process sends when the context of Start ends.
const killGrace = 5 * time.Second

// Result is the outcome of a process run to completion.
type Result struct {
	// ExitCode is the process's exit status; 128+n when signal n killed it (as a shell says).
	ExitCode int
	// Stdout and Stderr are the start of the process's output, up to the agent's limit (1 MiB
	// per stream by default).
	Stdout, Stderr []byte
	// StdoutTruncated and StderrTruncated say that the stream was longer than what is returned.
	StdoutTruncated, StderrTruncated bool
	// Signal names the signal that killed the process ("SIGKILL"); empty when it exited.
	Signal string
	// TimedOut is true when the agent killed the process because Cmd.Timeout passed.
	TimedOut bool
}

// Cmd describes a process to run in a sandbox. Exactly one of Args and Shell is set.
type Cmd struct {
	// Args is the program and its arguments; a program without a slash is looked up in PATH.
	Args []string
	// Shell is a command line run by /bin/sh -c, so pipes and redirections work.
	Shell string
	// Env is set on top of the sandbox container's environment.
	Env map[string]string
	// Dir is the working directory; it must exist. Empty: the agent's.
	Dir string
	// Timeout, when positive, makes the agent kill the process group once it has run this long.
	Timeout time.Duration
	// Stdin is copied to the process's stdin, which is then closed (RunCmd reads it all first;
	// at most 8 MiB).
	Stdin io.Reader
	// Stdout and Stderr receive the output as it arrives (Start only; with a TTY everything
	// comes on Stdout). Nil discards it.
	Stdout, Stderr io.Writer
	// TTY, when not nil, runs the process on a pseudo-terminal of that size (Start only).
	TTY *TTYSize
}

// TTYSize is the size of a terminal in character cells.
type TTYSize struct{ Rows, Cols uint16 }

// spec is the agent's ProcessSpec for cmd.
func (cmd *Cmd) spec() (*agentv1.ProcessSpec, error) {
	switch {
	case len(cmd.Args) == 0 && cmd.Shell == "":
		return nil, errors.New("kubox: the Cmd has neither Args nor Shell: set one, e.g. Args: []string{\"python3\", \"-V\"}")
	case len(cmd.Args) > 0 && cmd.Shell != "":
		return nil, errors.New("kubox: the Cmd has both Args and Shell: set only one")
	}
	spec := &agentv1.ProcessSpec{Argv: cmd.Args, ShellCommand: cmd.Shell, Env: cmd.Env, Cwd: cmd.Dir}
	if cmd.Timeout > 0 {
		spec.Timeout = durationpb.New(cmd.Timeout)
	}
	return spec, nil
}

func (e endpoint) process() agentv1connect.ProcessServiceClient {
	return agentv1connect.NewProcessServiceClient(e.http, e.base)
}

// Run runs name with args to completion in the sandbox and returns its exit code and output. A
// non-zero exit is not an error; an error means the process could not be run or followed.
func (s *Sandbox) Run(ctx context.Context, name string, args ...string) (*Result, error) {
	return s.RunCmd(ctx, Cmd{Args: append([]string{name}, args...)})
}

// RunCmd is Run with cmd's settings. Output is collected into the Result (cmd.Stdout, Stderr
// are not used); TTY is not available (use Start). Cancelling ctx kills the process.
func (s *Sandbox) RunCmd(ctx context.Context, cmd Cmd) (*Result, error) {
	if cmd.TTY != nil {
		return nil, errors.New("kubox: RunCmd cannot run on a TTY: use Start, which streams the terminal's output")
	}
	spec, err := cmd.spec()
	if err != nil {
		return nil, err
	}
	req := &agentv1.RunProcessRequest{Spec: spec}
	if cmd.Stdin != nil {
		if req.Stdin, err = io.ReadAll(cmd.Stdin); err != nil {
			return nil, fmt.Errorf("kubox: reading the Cmd's Stdin: %w", err)
		}
	}
	ep, err := s.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := ep.process().RunProcess(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, wrapCallError(err, s.object())
	}
	m := resp.Msg
	return &Result{
		ExitCode: int(m.GetExit().GetExitCode()),
		Stdout:   m.GetStdout(), Stderr: m.GetStderr(),
		StdoutTruncated: m.GetStdoutTruncated(), StderrTruncated: m.GetStderrTruncated(),
		Signal: m.GetExit().GetSignal(), TimedOut: m.GetExit().GetTimedOut(),
	}, nil
}

// Process is a process started with Start.
type Process struct {
	s    *Sandbox
	pc   agentv1connect.ProcessServiceClient
	id   string
	pid  int32
	done chan struct{}

	// Written by follow before done is closed.
	exit int
	err  error

	stdout, stderr io.Writer
	outOff, errOff int64
	writeErr       error
}

// Start starts cmd in the sandbox and returns once the agent has started it. Output is written to
// cmd.Stdout and cmd.Stderr, in the order the process wrote it, by a goroutine of Start's; Stdin
// is copied to the process and then closed. The agent holds the process back rather than drop
// output when the writers are slow (flow control).
//
// The process runs until it exits, Cmd.Timeout passes, or ctx ends: when ctx ends first, Start
// sends SIGKILL to the process group (as os/exec's CommandContext does) and Wait returns ctx's
// error. A broken connection does not stop the process: the Process follows it again
// (AttachProcess) from the last byte it wrote.
func (s *Sandbox) Start(ctx context.Context, cmd Cmd) (*Process, error) {
	spec, err := cmd.spec()
	if err != nil {
		return nil, err
	}
	ep, err := s.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	req := &agentv1.StartProcessRequest{Spec: spec, Stdin: cmd.Stdin != nil, FlowControl: true}
	if cmd.TTY != nil {
		req.Pty = &agentv1.PtySize{Rows: uint32(cmd.TTY.Rows), Cols: uint32(cmd.TTY.Cols)}
	}
	pc := ep.process()
	stream, err := pc.StartProcess(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, wrapCallError(err, s.object())
	}
	if !stream.Receive() {
		err := stream.Err()
		_ = stream.Close()
		if err == nil {
			err = errors.New("the agent ended the stream before the process started")
		}
		return nil, wrapCallError(err, s.object())
	}
	started := stream.Msg().GetEvent().GetStarted()
	if started == nil {
		_ = stream.Close()
		return nil, fmt.Errorf("kubox: %s: the agent's first event is not Started", s.object())
	}
	p := &Process{s: s, pc: pc, id: started.GetProcessId(), pid: started.GetPid(), done: make(chan struct{}),
		stdout: orDiscard(cmd.Stdout), stderr: orDiscard(cmd.Stderr)}
	go p.follow(ctx, stream)
	if cmd.Stdin != nil {
		go p.pumpStdin(ctx, cmd.Stdin)
	}
	return p, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// ID is the agent's id of the process (not its pid).
func (p *Process) ID() string { return p.id }

// Pid is the process's pid in the sandbox.
func (p *Process) Pid() int { return int(p.pid) }

// Wait waits until the process has exited and all its output was written to Cmd.Stdout and
// Cmd.Stderr, and returns its exit code (128+n when signal n killed it). A non-zero exit is not
// an error; the error says the process could not be followed to its end, or a writer failed. Wait
// does not wait for Cmd.Stdin to reach EOF.
func (p *Process) Wait() (exitCode int, err error) {
	<-p.done
	return p.exit, p.err
}

// Signal sends sig to the process's process group.
func (p *Process) Signal(ctx context.Context, sig syscall.Signal) error {
	_, err := p.pc.SendSignal(ctx, connect.NewRequest(&agentv1.SendSignalRequest{ProcessId: p.id, Signal: strconv.Itoa(int(sig))}))
	return wrapCallError(err, p.object())
}

// Resize changes the size of the process's terminal; a process started without TTY fails
// (HTTP 412, connect code failed_precondition).
func (p *Process) Resize(ctx context.Context, size TTYSize) error {
	_, err := p.pc.ResizePty(ctx, connect.NewRequest(&agentv1.ResizePtyRequest{ProcessId: p.id,
		Size: &agentv1.PtySize{Rows: uint32(size.Rows), Cols: uint32(size.Cols)}}))
	return wrapCallError(err, p.object())
}

func (p *Process) object() string { return "process " + p.id + " in " + p.s.object() }

// pumpStdin copies r to the process's stdin and then closes it.
func (p *Process) pumpStdin(ctx context.Context, r io.Reader) {
	buf := make([]byte, stdinChunk)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := p.pc.SendInput(ctx, connect.NewRequest(&agentv1.SendInputRequest{ProcessId: p.id, Data: buf[:n]})); err != nil {
				return // the process exited or the stream's context ended; Wait reports that
			}
		}
		if rerr != nil {
			_, _ = p.pc.SendInput(ctx, connect.NewRequest(&agentv1.SendInputRequest{ProcessId: p.id, CloseStdin: true}))
			return
		}
	}
}

// events is one stream of a process's events: StartProcess's or AttachProcess's.
type events interface {
	Receive() bool
	Err() error
	Close() error
}

type startEvents struct {
	*connect.ServerStreamForClient[agentv1.StartProcessResponse]
}

type attachEvents struct {
	*connect.ServerStreamForClient[agentv1.AttachProcessResponse]
}

func eventOf(s events) *agentv1.ProcessEvent {
	switch s := s.(type) {
	case startEvents:
		return s.Msg().GetEvent()
	case attachEvents:
		return s.Msg().GetEvent()
	}
	return nil
}

// follow writes the process's output until it exits, re-attaching when the stream breaks.
func (p *Process) follow(ctx context.Context, stream *connect.ServerStreamForClient[agentv1.StartProcessResponse]) {
	defer close(p.done)
	var es events = startEvents{stream}
	for attempt := 0; ; attempt++ {
		exited, err := p.drain(es)
		_ = es.Close()
		if exited != nil {
			p.exit = int(exited.GetExitCode())
			p.err = p.writeErr
			return
		}
		if ctx.Err() != nil {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killGrace)
			_ = p.Signal(kctx, syscall.SIGKILL)
			cancel()
			p.err = fmt.Errorf("kubox: %s: %w (the process was killed)", p.object(), ctx.Err())
			return
		}
		if attempt == reattachLimit {
			if err == nil {
				err = errors.New("the agent ended the stream before the process exited")
			}
			p.err = wrapCallError(err, p.object())
			return
		}
		as, aerr := p.pc.AttachProcess(ctx, connect.NewRequest(&agentv1.AttachProcessRequest{ProcessId: p.id,
			StdoutOffset: p.outOff, StderrOffset: p.errOff, FlowControl: true}))
		if aerr != nil {
			p.err = wrapCallError(errors.Join(err, aerr), p.object())
			return
		}
		es = attachEvents{as}
	}
}

// drain writes the output events of es until the process exits (returned) or the stream ends.
func (p *Process) drain(es events) (*agentv1.ProcessExit, error) {
	for es.Receive() {
		ev := eventOf(es)
		switch {
		case ev.GetOutput() != nil:
			p.write(ev.GetOutput())
		case ev.GetDropped() != nil:
			d := ev.GetDropped()
			off := &p.outOff
			if d.GetStream() == agentv1.OutputStream_OUTPUT_STREAM_STDERR {
				off = &p.errOff
			}
			*off = max(*off, d.GetOffset()+d.GetLength())
		case ev.GetExited() != nil:
			return ev.GetExited(), nil
		}
	}
	return nil, es.Err()
}

// write writes a chunk of output, skipping what an earlier stream already delivered.
func (p *Process) write(o *agentv1.ProcessOutput) {
	w, off := p.stdout, &p.outOff
	if o.GetStream() == agentv1.OutputStream_OUTPUT_STREAM_STDERR {
		w, off = p.stderr, &p.errOff
	}
	data := o.GetData()
	if skip := *off - o.GetOffset(); skip > 0 {
		if skip >= int64(len(data)) {
			return
		}
		data = data[skip:]
	}
	*off = o.GetOffset() + int64(len(o.GetData()))
	if p.writeErr != nil {
		return
	}
	if _, err := w.Write(data); err != nil {
		p.writeErr = fmt.Errorf("kubox: writing the output of %s: %w", p.object(), err)
	}
}
