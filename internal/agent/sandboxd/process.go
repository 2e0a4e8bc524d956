package sandboxd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/agent/files"
	"github.com/kubox-dev/kubox/internal/agent/process"
	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
	"github.com/kubox-dev/kubox/proto/process/v1/processv1connect"
)

// DefaultMaxExecuteOutput is how many bytes of each of stdout and stderr Execute returns at most
// by default; more fails the call (nothing is cut silently).
const DefaultMaxExecuteOutput int64 = 16 << 20

// The terminal size of a Start with a PTY that gives none.
const (
	defaultPTYRows = 24
	defaultPTYCols = 80
)

// ProcessOptions configure NewProcessService.
type ProcessOptions struct {
	// Root confines cwd; commands run in its directory when they give none.
	Root *files.Root
	// ExecuteTimeout, when positive, is the longest an Execute may run; the call's own deadline
	// bounds it too.
	ExecuteTimeout time.Duration
	// MaxExecuteOutput is the most bytes of each stream Execute returns; DefaultMaxExecuteOutput
	// when 0.
	MaxExecuteOutput int64
}

// ProcessService serves process.v1.ProcessService over the agent's process.Manager.
//
// A Start registers its process under its pid, which InitEvent reports as process_id, until the
// stream ends; WriteStdin, SendSignal and ResizeTTY find it there. Ending the stream before the
// process exits stops the process group (SIGTERM, then SIGKILL after the grace period), as
// sandboxd does.
type ProcessService struct {
	m    *process.Manager
	opts ProcessOptions

	mu      sync.Mutex
	started map[int32]*process.Process
}

var _ processv1connect.ProcessServiceHandler = (*ProcessService)(nil)

// NewProcessService returns the service over m.
func NewProcessService(m *process.Manager, opts ProcessOptions) *ProcessService {
	if opts.MaxExecuteOutput == 0 {
		opts.MaxExecuteOutput = DefaultMaxExecuteOutput
	}
	return &ProcessService{m: m, opts: opts, started: map[int32]*process.Process{}}
}

// Start implements processv1connect.ProcessServiceHandler.
func (s *ProcessService) Start(ctx context.Context, req *connect.Request[processv1.StartRequest], stream *connect.ServerStream[processv1.StartResponse]) error {
	spec, err := s.spec(req.Msg.GetConfig())
	if err != nil {
		return err
	}
	if req.Msg.Pty != nil {
		size, err := ptySize("pty", req.Msg.GetPty().GetRows(), req.Msg.GetPty().GetCols(), true)
		if err != nil {
			return err
		}
		spec.PTY = &size
	}
	spec.Stdin = true       // sandboxd keeps stdin open for WriteStdin
	spec.FlowControl = true // every byte reaches the stream: the wire has no way to report a gap
	p, err := s.m.Start(spec)
	if err != nil {
		return err
	}
	defer p.ReleaseHold()
	id := int32(p.PID())
	s.register(id, p)
	defer s.forget(id, p)
	defer stopIfRunning(p)
	if err := stream.Send(&processv1.StartResponse{Event: &processv1.StartResponse_Init{
		Init: &processv1.InitEvent{ProcessId: id},
	}}); err != nil {
		return err
	}
	return p.Follow(ctx, 0, 0, true, func(ev process.Event) error {
		msg, err := startEvent(ev)
		if err != nil {
			return err
		}
		return stream.Send(msg)
	})
}

// startEvent maps an event of the agent's process onto sandboxd's stream.
func startEvent(ev process.Event) (*processv1.StartResponse, error) {
	switch {
	case ev.Output != nil && ev.Output.Stream == process.Stderr:
		return &processv1.StartResponse{Event: &processv1.StartResponse_Stderr{Stderr: ev.Output.Data}}, nil
	case ev.Output != nil: // stdout, or the terminal of a PTY process
		return &processv1.StartResponse{Event: &processv1.StartResponse_Stdout{Stdout: ev.Output.Data}}, nil
	case ev.Exit != nil:
		return &processv1.StartResponse{Event: &processv1.StartResponse_Exit{
			Exit: &processv1.ExitEvent{ExitCode: int32(ev.Exit.Code)},
		}}, nil
	default: // flow control makes this unreachable; never pass a gap on as if nothing was lost
		return nil, connect.NewError(connect.CodeDataLoss, fmt.Errorf(
			"%d bytes of the process's %s were lost before this stream read them", ev.Dropped.Length, ev.Dropped.Stream))
	}
}

// stopIfRunning ends p when the Start stream or the Execute call ends before p exited (the client
// went away, the call's deadline or Execute's output limit passed, the agent is shutting down), so
// no process outlives the only client that can reach it. It ends p gracefully, as sandboxd
// v1.0.13 ends an Execute: SIGTERM to the process group, then SIGKILL after the agent's grace
// period (process.Process.Stop).
func stopIfRunning(p *process.Process) {
	select {
	case <-p.Done():
	default:
		p.Stop()
	}
}

// Execute implements processv1connect.ProcessServiceHandler. It follows the process like Start
// (with flow control, so nothing is dropped) and collects its output, so the agent's limit is its
// own, not the process manager's capture cap; output beyond it stops the process group and fails
// the call. Execute's time limit (ProcessOptions.ExecuteTimeout), the call's deadline and a client
// that went away stop it too; each stop is SIGTERM to the group, then SIGKILL after the grace
// period, as sandboxd v1.0.13 does.
func (s *ProcessService) Execute(ctx context.Context, req *connect.Request[processv1.ExecuteRequest]) (*connect.Response[processv1.ExecuteResponse], error) {
	spec, err := s.spec(req.Msg.GetConfig())
	if err != nil {
		return nil, err
	}
	spec.Timeout = s.opts.ExecuteTimeout
	spec.FlowControl = true
	p, err := s.m.Start(spec)
	if err != nil {
		return nil, err
	}
	defer p.ReleaseHold()
	defer stopIfRunning(p)
	var stdout, stderr []byte
	var exit *process.ExitStatus
	err = p.Follow(ctx, 0, 0, true, func(ev process.Event) error {
		switch {
		case ev.Output != nil:
			buf, name := &stdout, "stdout"
			if ev.Output.Stream == process.Stderr {
				buf, name = &stderr, "stderr"
			}
			if int64(len(*buf)+len(ev.Output.Data)) > s.opts.MaxExecuteOutput {
				return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
					"%q wrote more than %d bytes to %s, the most Execute returns per stream, and was stopped: no output is cut "+
						"silently; use Start to stream it, or redirect it to a file", spec.Argv[0], s.opts.MaxExecuteOutput, name))
			}
			*buf = append(*buf, ev.Output.Data...)
		case ev.Exit != nil:
			exit = ev.Exit
		default:
			_, err := startEvent(ev) // a gap: DataLoss
			return err
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			code := connect.CodeCanceled
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				code = connect.CodeDeadlineExceeded
			}
			return nil, connect.NewError(code, fmt.Errorf("%q was stopped (SIGTERM, then SIGKILL) because the call ended: %w", spec.Argv[0], ctx.Err()))
		}
		return nil, err
	}
	if exit.TimedOut {
		return nil, connect.NewError(connect.CodeDeadlineExceeded, fmt.Errorf(
			"%q was stopped (SIGTERM, then SIGKILL) after the agent's Execute limit of %s; use Start for longer commands", spec.Argv[0], s.opts.ExecuteTimeout))
	}
	return connect.NewResponse(&processv1.ExecuteResponse{ExitCode: int32(exit.Code), Stdout: stdout, Stderr: stderr}), nil
}

// WriteStdin implements processv1connect.ProcessServiceHandler.
func (s *ProcessService) WriteStdin(ctx context.Context, req *connect.Request[processv1.WriteStdinRequest]) (*connect.Response[processv1.WriteStdinResponse], error) {
	p, err := s.get(req.Msg.GetProcessId())
	if err != nil {
		return nil, err
	}
	switch req.Msg.GetPayload().(type) {
	case *processv1.WriteStdinRequest_Eof:
		err = p.Input(ctx, nil, true)
	case *processv1.WriteStdinRequest_Input:
		err = p.Input(ctx, req.Msg.GetInput(), false)
	}
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&processv1.WriteStdinResponse{}), nil
}

// SendSignal implements processv1connect.ProcessServiceHandler.
func (s *ProcessService) SendSignal(_ context.Context, req *connect.Request[processv1.SendSignalRequest]) (*connect.Response[processv1.SendSignalResponse], error) {
	var sig syscall.Signal
	switch req.Msg.GetSignal() {
	case processv1.Signal_SIGNAL_SIGINT:
		sig = syscall.SIGINT
	case processv1.Signal_SIGNAL_SIGKILL:
		sig = syscall.SIGKILL
	case processv1.Signal_SIGNAL_SIGTERM:
		sig = syscall.SIGTERM
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(
			"signal %v: send SIGNAL_SIGINT, SIGNAL_SIGTERM or SIGNAL_SIGKILL", req.Msg.GetSignal()))
	}
	p, err := s.get(req.Msg.GetProcessId())
	if err != nil {
		return nil, err
	}
	if err := p.Signal(sig); err != nil {
		return nil, err
	}
	return connect.NewResponse(&processv1.SendSignalResponse{}), nil
}

// ResizeTTY implements processv1connect.ProcessServiceHandler.
func (s *ProcessService) ResizeTTY(_ context.Context, req *connect.Request[processv1.ResizeTTYRequest]) (*connect.Response[processv1.ResizeTTYResponse], error) {
	size, err := ptySize("size", req.Msg.GetRows(), req.Msg.GetCols(), false)
	if err != nil {
		return nil, err
	}
	p, err := s.get(req.Msg.GetProcessId())
	if err != nil {
		return nil, err
	}
	if err := p.Resize(size); err != nil {
		return nil, err
	}
	return connect.NewResponse(&processv1.ResizeTTYResponse{}), nil
}

// spec turns sandboxd's ProcessConfig into the agent's process.Spec.
func (s *ProcessService) spec(c *processv1.ProcessConfig) (process.Spec, error) {
	if len(c.GetCommand()) == 0 || c.GetCommand()[0] == "" {
		return process.Spec{}, connect.NewError(connect.CodeInvalidArgument, errors.New(
			`config.command is empty: give the program and its arguments, such as ["sh", "-c", "echo hi"]`))
	}
	dir := s.opts.Root.Dir()
	if c.Cwd != nil && c.GetCwd() != "" {
		var err error
		if dir, err = s.opts.Root.Resolve(c.GetCwd()); err != nil {
			return process.Spec{}, connect.NewError(files.CodeOf(err), fmt.Errorf("config.cwd: %w", err))
		}
	}
	return process.Spec{Argv: c.GetCommand(), Env: c.GetEnvVars(), Dir: dir, Tag: "sandboxd"}, nil
}

// ptySize checks a terminal size; with defaults, 0 takes the default size.
func ptySize(field string, rows, cols uint32, defaults bool) (process.PTYSize, error) {
	if defaults && rows == 0 {
		rows = defaultPTYRows
	}
	if defaults && cols == 0 {
		cols = defaultPTYCols
	}
	if rows == 0 || cols == 0 || rows > math.MaxUint16 || cols > math.MaxUint16 {
		return process.PTYSize{}, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(
			"%s: rows and cols must be between 1 and 65535, got %dx%d", field, rows, cols))
	}
	return process.PTYSize{Rows: uint16(rows), Cols: uint16(cols)}, nil
}

func (s *ProcessService) register(id int32, p *process.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started[id] = p
}

func (s *ProcessService) forget(id int32, p *process.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started[id] == p {
		delete(s.started, id)
	}
}

func (s *ProcessService) get(id int32) (*process.Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.started[id]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf(
			"no process %d: process_id is the InitEvent of a Start stream that is still open", id))
	}
	return p, nil
}
