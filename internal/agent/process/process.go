package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sys/unix"
)

// Process is a process the Manager started. Its methods are safe for concurrent use.
type Process struct {
	m       *Manager
	id      string
	pid     int
	argv    []string
	tag     string
	pty     bool
	main    bool
	started time.Time
	out     *replay
	capture *capture // set by Run, nil otherwise

	// writeMu serializes writers of stdin; it is never held by the exit path, which closes stdin
	// (waking a blocked writer) without waiting for writers.
	writeMu sync.Mutex
	mu      sync.Mutex
	stdin   *os.File // stdin's write end, or the PTY master; nil once closed
	reaped  bool     // the process has exited (its output may still be draining)
	master  *os.File // the PTY master while it is open
	readers []*os.File
	reading sync.WaitGroup

	// hold is the paced follower registered at start for Spec.FlowControl until Follow adopts it.
	hold atomic.Pointer[follower]

	status   chan unix.WaitStatus // the reaper's status, buffered
	timer    *time.Timer
	timedOut atomic.Bool
	stopping atomic.Bool // Stop (or the timeout) has begun ending the process group
	done     chan struct{}
	exit     ExitStatus // valid once done is closed
}

// Info describes a process.
type Info struct {
	ID   string
	PID  int
	Argv []string
	Tag  string
	PTY  bool
	// Main is true for the sandbox's main process (StartMain).
	Main    bool
	Started time.Time
	// StdoutBytes (the PTY's bytes for a process on a PTY) and StderrBytes are what the process has
	// written so far.
	StdoutBytes, StderrBytes int64
	// Exit is set once the process has exited.
	Exit      *ExitStatus
	StdinOpen bool
}

// ID is the agent-assigned process id.
func (p *Process) ID() string { return p.id }

// PID is the process id (also the process group id).
func (p *Process) PID() int { return p.pid }

// Done is closed once the process has exited and all its output was read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit is how the process ended; valid once Done is closed.
func (p *Process) Exit() ExitStatus {
	<-p.done
	return p.exit
}

// Wait waits for the process to exit, or for ctx.
func (p *Process) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-p.done:
		return p.exit, nil
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
}

func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Info describes the process now.
func (p *Process) Info() Info {
	t := p.out.totals()
	info := Info{
		ID: p.id, PID: p.pid, Argv: p.argv, Tag: p.tag, PTY: p.pty, Main: p.main, Started: p.started,
		StdoutBytes: t[Stdout] + t[PTY], StderrBytes: t[Stderr],
	}
	if p.exited() {
		exit := p.exit
		info.Exit = &exit
	}
	p.mu.Lock()
	info.StdinOpen = p.stdin != nil
	p.mu.Unlock()
	return info
}

// Signal sends sig to the process's group. It fails with FailedPrecondition once the process was
// reaped.
func (p *Process) Signal(sig syscall.Signal) error {
	sent, err := p.m.reaper.kill(p.pid, sig, nil)
	if err != nil {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("send %s to process %s (pid %d): %w", SignalName(sig), p.id, p.pid, err))
	}
	if !sent {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %s has exited; there is nothing to signal", p.id))
	}
	return nil
}

// Resize sets the size of the process's terminal.
func (p *Process) Resize(size PTYSize) error {
	if !p.pty {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %s was started without a PTY, so it has no terminal to resize; start it with pty set", p.id))
	}
	if size.Rows == 0 || size.Cols == 0 {
		return invalid("size: rows and cols must be between 1 and 65535, got %dx%d", size.Rows, size.Cols)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.master == nil {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %s has exited; its terminal is closed", p.id))
	}
	if err := setPTYSize(p.master, size); err != nil {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("resize the terminal of process %s: %w", p.id, err))
	}
	return nil
}

// eot is the terminal's default end-of-file character (Ctrl-D).
const eot = 0x04

// Input writes data to the process's stdin and then, with closeStdin, closes it (with a PTY, writes
// Ctrl-D instead). It waits until data is written; cancelling ctx abandons the write.
func (p *Process) Input(ctx context.Context, data []byte, closeStdin bool) error {
	if p.main {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %s is the sandbox's main process; its stdin is the container's", p.id))
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.mu.Lock()
	f, reaped := p.stdin, p.reaped
	p.mu.Unlock()
	if f == nil {
		if reaped {
			return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %s has exited; it reads no more input", p.id))
		}
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("the stdin of process %s is closed; start a process with stdin set to write to it", p.id))
	}
	if p.pty && closeStdin {
		data = append(bytes.Clone(data), eot)
	}
	if len(data) > 0 {
		if err := f.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, os.ErrClosed) {
			return connect.NewError(connect.CodeInternal, fmt.Errorf("write to the stdin of process %s: %w", p.id, err))
		}
		stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Unix(1, 0)) })
		n, err := f.Write(data)
		stop()
		if err != nil {
			if ctx.Err() != nil {
				return connect.NewError(ctxCode(ctx.Err()), fmt.Errorf("wrote %d of %d bytes to the stdin of process %s: %w", n, len(data), p.id, ctx.Err()))
			}
			return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("wrote %d of %d bytes to the stdin of process %s, which has exited or closed its stdin: %w", n, len(data), p.id, err))
		}
	}
	if closeStdin && !p.pty {
		p.closeStdin()
	}
	return nil
}

func (p *Process) closeStdin() {
	p.mu.Lock()
	f := p.stdin
	p.stdin = nil
	p.mu.Unlock()
	if f != nil && !p.pty { // a PTY's stdin is the master, closed with the readers
		_ = f.Close()
	}
}

// Follow sends the process's output from the given offsets (stdoutOffset counts the PTY's bytes
// for a process on a PTY), then its exit. It returns nil after the exit, or ctx's or send's error.
//
// A follower that falls more than Options.ReplayBytes behind is sent Dropped events for what it
// missed; the process never waits for it. With flowControl the process's output is not read (so the
// process blocks once its pipe is full) while this follower is that far behind, and no byte is
// dropped until the process exits; ending ctx ends the hold.
func (p *Process) Follow(ctx context.Context, stdoutOffset, stderrOffset int64, flowControl bool, send func(Event) error) error {
	if err := p.CheckOffsets(stdoutOffset, stderrOffset); err != nil {
		return err
	}
	var from [numStreams]int64
	from[p.outStream()], from[Stderr] = stdoutOffset, stderrOffset
	var held *follower
	if flowControl && stdoutOffset == 0 && stderrOffset == 0 {
		held = p.hold.Swap(nil)
	}
	return p.out.follow(ctx, from, flowControl, held, send)
}

// ReleaseHold drops the flow-control hold of a process started with Spec.FlowControl that will not
// be followed after all (the client went away before Follow); a no-op otherwise.
func (p *Process) ReleaseHold() {
	if f := p.hold.Swap(nil); f != nil {
		p.out.unpace(f)
	}
}

// CheckOffsets reports whether Follow can start at these offsets: not past what the process wrote.
func (p *Process) CheckOffsets(stdoutOffset, stderrOffset int64) error {
	if p.main {
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("process %s is the sandbox's main process; its output goes to the container log (kubectl logs)", p.id))
	}
	t := p.out.totals()
	for _, c := range []struct {
		field  string
		s      Stream
		offset int64
	}{{"stdout_offset", p.outStream(), stdoutOffset}, {"stderr_offset", Stderr, stderrOffset}} {
		if c.offset < 0 || c.offset > t[c.s] {
			return invalid("%s %d is outside the %d bytes process %s has written to %s", c.field, c.offset, t[c.s], p.id, c.s)
		}
	}
	return nil
}

func (p *Process) outStream() Stream {
	if p.pty {
		return PTY
	}
	return Stdout
}

// read copies one output stream into the replay buffer (and the Run capture) until EOF, an error
// (EIO once a PTY's last holder closed it), or the drain deadline set after the exit.
func (p *Process) read(f *os.File, s Stream) {
	defer p.reading.Done()
	buf := make([]byte, readBytes)
	for {
		p.out.waitRoom()
		n, err := f.Read(buf)
		if n > 0 {
			data := bytes.Clone(buf[:n])
			if p.capture != nil {
				p.capture.add(s, data)
			}
			p.out.append(s, data)
		}
		if err != nil {
			return
		}
	}
}

// wait finishes the process once the reaper delivers its status: it lets the readers drain what the
// process wrote (a background child that still holds the pipes gets Options.OutputDrain), closes
// the agent's ends, and publishes the exit.
func (p *Process) wait() {
	ws := <-p.status
	at := time.Now()
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	p.out.release()
	if p.timer != nil {
		p.timer.Stop()
	}
	deadline := at.Add(p.m.opts.OutputDrain)
	for _, f := range p.readers {
		_ = f.SetReadDeadline(deadline)
	}
	p.reading.Wait()
	p.closeStdin()
	p.mu.Lock()
	p.master = nil
	p.mu.Unlock()
	for _, f := range p.readers {
		_ = f.Close()
	}
	p.exit = exitStatus(ws, p.timedOut.Load(), at)
	p.out.finish(p.exit)
	p.m.finished(p)
	close(p.done)
}

func exitStatus(ws unix.WaitStatus, timedOut bool, at time.Time) ExitStatus {
	if ws.Signaled() {
		return ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal(), TimedOut: timedOut, At: at}
	}
	return ExitStatus{Code: ws.ExitStatus(), TimedOut: timedOut, At: at}
}

// Stop ends the process the way the agent ends every process it stops itself (a timeout, a call
// that ended, an output limit): SIGTERM to its process group, then SIGKILL to the group after
// Options.StopGrace if any member is still running, also once the process itself has exited (a
// child that ignores SIGTERM outlives its shell). It returns at once; Done is closed when the
// process has exited. Only the first Stop or timeout acts, and a process that exited first is
// left alone, its background children too. A client's own signal goes through Signal instead.
func (p *Process) Stop() { p.stop(false) }

// stop is Stop, marking the exit as timed out when timedOut is set.
func (p *Process) stop(timedOut bool) {
	if !p.stopping.CompareAndSwap(false, true) {
		return
	}
	var mark func()
	if timedOut {
		mark = func() { p.timedOut.Store(true) }
	}
	if sent, _ := p.m.reaper.kill(p.pid, syscall.SIGTERM, mark); sent {
		go p.escalate()
	}
}

// escalate sends SIGKILL to the process group once the grace period has passed, unless the group
// has no running member by then; when the Manager's Shutdown has ended, at once. A group whose
// leader has exited keeps its number while any member lives (the kernel does not reuse it), so
// the reaper's killGroup checks /proc for one right before it signals.
func (p *Process) escalate() {
	grace := time.NewTimer(p.m.opts.StopGrace)
	defer grace.Stop()
	select {
	case <-grace.C:
	case <-p.m.down:
	case <-p.done:
		// The leader is gone; a member that outlived it still gets the rest of the grace period.
		if !p.m.reaper.groupAlive(p.pid) {
			return
		}
		select {
		case <-grace.C:
		case <-p.m.down:
		}
	}
	_ = p.m.reaper.killGroup(p.pid)
}

// kill sends SIGKILL to the process group while the process is not yet reaped.
func (p *Process) kill() {
	_, _ = p.m.reaper.kill(p.pid, syscall.SIGKILL, nil)
}

// capture keeps the first max bytes of stdout and stderr for Run.
type capture struct {
	mu  sync.Mutex
	max int64
	buf [numStreams][]byte
}

func (c *capture) add(s Stream, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - int64(len(c.buf[s])); room > 0 {
		c.buf[s] = append(c.buf[s], data[:min(int64(len(data)), room)]...)
	}
}

// ctxCode is the connect code for a context's error.
func ctxCode(err error) connect.Code {
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.CodeDeadlineExceeded
	}
	return connect.CodeCanceled
}
