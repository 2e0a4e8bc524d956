package e2b

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/agent/files"
	"github.com/kubox-dev/kubox/internal/agent/process"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	"github.com/kubox-dev/kubox/proto/e2b/envd/process/envdprocessconnect"
)

// processTag is the tag the agent's own ListProcesses shows for processes started through envd's
// API; an E2B tag is kept apart, in started.
const processTag = "e2b"

// ProcessService serves envd's process.Process over the agent's process.Manager.
//
// Start registers its process under its pid (and its E2B tag) until the process exits, not until
// the stream ends: E2B's background commands outlive the stream that started them, and a client
// finds them again with Connect, List or a selector.
type ProcessService struct {
	m    *process.Manager
	root *files.Root
	// workDir is where a process runs when it gives no cwd ("" is the agent's own).
	workDir string

	mu      sync.Mutex
	running map[uint32]*started
	seq     uint64
}

// started is a process started through this service.
type started struct {
	p      *process.Process
	config *envdprocess.ProcessConfig
	tag    *string
	seq    uint64
}

var _ envdprocessconnect.ProcessHandler = (*ProcessService)(nil)

// NewProcessService returns the service over m; cwd is confined to root.
func NewProcessService(m *process.Manager, root *files.Root, workDir string) *ProcessService {
	return &ProcessService{m: m, root: root, workDir: workDir, running: map[uint32]*started{}}
}

// Start implements envdprocessconnect.ProcessHandler. The stream has flow control: no output is
// dropped while it is open. When it ends first, the process keeps running, until the call's
// timeout when it has one (Connect-Timeout-Ms or grpc-timeout), as envd ends a command then;
// the agent ends it as on its other process APIs (SIGTERM to the process group, then SIGKILL after
// the grace period; process.Process.Stop).
func (s *ProcessService) Start(ctx context.Context, req *connect.Request[envdprocess.StartRequest],
	stream *connect.ServerStream[envdprocess.StartResponse]) error {
	spec, err := s.spec(req.Msg)
	if err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		spec.Timeout = max(time.Until(deadline), time.Millisecond)
	}
	p, err := s.m.Start(spec)
	if err != nil {
		return err
	}
	defer p.ReleaseHold()
	pid := s.register(p, req.Msg.GetProcess(), req.Msg.Tag)
	out := newSender(ctx, req.Header(), func(ev *envdprocess.ProcessEvent) error {
		return stream.Send(&envdprocess.StartResponse{Event: ev})
	}, keepaliveEvent)
	defer out.stop()
	if err := out.send(startEvent(pid)); err != nil {
		return err
	}
	return p.Follow(ctx, 0, 0, true, func(ev process.Event) error { return sendEvent(out, ev) })
}

// Connect implements envdprocessconnect.ProcessHandler: it follows the process from the output
// it writes next, as envd does; output a slow client misses is skipped (the wire cannot say so).
func (s *ProcessService) Connect(ctx context.Context, req *connect.Request[envdprocess.ConnectRequest],
	stream *connect.ServerStream[envdprocess.ConnectResponse]) error {
	st, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return err
	}
	out := newSender(ctx, req.Header(), func(ev *envdprocess.ProcessEvent) error {
		return stream.Send(&envdprocess.ConnectResponse{Event: ev})
	}, keepaliveEvent)
	defer out.stop()
	info := st.p.Info()
	if err := out.send(startEvent(uint32(st.p.PID()))); err != nil {
		return err
	}
	return st.p.Follow(ctx, info.StdoutBytes, info.StderrBytes, false, func(ev process.Event) error {
		if ev.Dropped != nil {
			return nil
		}
		return sendEvent(out, ev)
	})
}

// List implements envdprocessconnect.ProcessHandler.
func (s *ProcessService) List(context.Context, *connect.Request[envdprocess.ListRequest]) (*connect.Response[envdprocess.ListResponse], error) {
	s.mu.Lock()
	all := make([]*started, 0, len(s.running))
	for _, st := range s.running {
		all = append(all, st)
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b *started) int { return cmp.Compare(a.seq, b.seq) })
	res := &envdprocess.ListResponse{Processes: make([]*envdprocess.ProcessInfo, 0, len(all))}
	for _, st := range all {
		res.Processes = append(res.Processes, &envdprocess.ProcessInfo{Config: st.config, Pid: uint32(st.p.PID()), Tag: st.tag})
	}
	return connect.NewResponse(res), nil
}

// Update implements envdprocessconnect.ProcessHandler: it resizes the process's terminal.
func (s *ProcessService) Update(_ context.Context, req *connect.Request[envdprocess.UpdateRequest]) (*connect.Response[envdprocess.UpdateResponse], error) {
	st, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty != nil {
		size, err := ptySize(req.Msg.GetPty())
		if err != nil {
			return nil, err
		}
		if err := st.p.Resize(size); err != nil {
			return nil, err
		}
	}
	return connect.NewResponse(&envdprocess.UpdateResponse{}), nil
}

// SendInput implements envdprocessconnect.ProcessHandler.
func (s *ProcessService) SendInput(ctx context.Context, req *connect.Request[envdprocess.SendInputRequest]) (*connect.Response[envdprocess.SendInputResponse], error) {
	st, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := st.p.Input(ctx, inputBytes(req.Msg.GetInput()), false); err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdprocess.SendInputResponse{}), nil
}

// StreamInput implements envdprocessconnect.ProcessHandler: the first message selects the
// process, data messages are written to it in order.
func (s *ProcessService) StreamInput(ctx context.Context, stream *connect.ClientStream[envdprocess.StreamInputRequest]) (*connect.Response[envdprocess.StreamInputResponse], error) {
	var st *started
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().(type) {
		case *envdprocess.StreamInputRequest_Start:
			var err error
			if st, err = s.find(ev.Start.GetProcess()); err != nil {
				return nil, err
			}
		case *envdprocess.StreamInputRequest_Data:
			if st == nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, errors.New(
					"a data event came before the start event: send start (the process selector) first"))
			}
			if err := st.p.Input(ctx, inputBytes(ev.Data.GetInput()), false); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdprocess.StreamInputResponse{}), nil
}

// SendSignal implements envdprocessconnect.ProcessHandler.
func (s *ProcessService) SendSignal(_ context.Context, req *connect.Request[envdprocess.SendSignalRequest]) (*connect.Response[envdprocess.SendSignalResponse], error) {
	var sig syscall.Signal
	switch req.Msg.GetSignal() {
	case envdprocess.Signal_SIGNAL_SIGTERM:
		sig = syscall.SIGTERM
	case envdprocess.Signal_SIGNAL_SIGKILL:
		sig = syscall.SIGKILL
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(
			"signal %v: send SIGNAL_SIGTERM or SIGNAL_SIGKILL", req.Msg.GetSignal()))
	}
	st, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := st.p.Signal(sig); err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdprocess.SendSignalResponse{}), nil
}

// CloseStdin implements envdprocessconnect.ProcessHandler.
func (s *ProcessService) CloseStdin(ctx context.Context, req *connect.Request[envdprocess.CloseStdinRequest]) (*connect.Response[envdprocess.CloseStdinResponse], error) {
	st, err := s.find(req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	switch info := st.p.Info(); {
	case info.PTY:
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
			"process %d runs on a terminal, which has no stdin to close: send 0x04 (Ctrl-D) as pty input", st.p.PID()))
	case !info.StdinOpen: // closed already (or never open): nothing to do, as envd answers
		return connect.NewResponse(&envdprocess.CloseStdinResponse{}), nil
	}
	if err := st.p.Input(ctx, nil, true); err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdprocess.CloseStdinResponse{}), nil
}

// spec turns a StartRequest into the agent's process.Spec.
func (s *ProcessService) spec(req *envdprocess.StartRequest) (process.Spec, error) {
	c := req.GetProcess()
	if c.GetCmd() == "" {
		return process.Spec{}, connect.NewError(connect.CodeInvalidArgument, errors.New(
			`process.cmd is empty: give the program, such as "/bin/bash" with args ["-l", "-c", "echo hi"]`))
	}
	spec := process.Spec{Argv: append([]string{c.GetCmd()}, c.GetArgs()...), Env: c.GetEnvs(), Dir: s.workDir,
		Tag: processTag, Stdin: req.Stdin == nil || req.GetStdin(), FlowControl: true}
	if c.Cwd != nil && c.GetCwd() != "" {
		dir, err := s.root.Resolve(c.GetCwd())
		if err != nil {
			return process.Spec{}, connect.NewError(files.CodeOf(err), fmt.Errorf("process.cwd: %w", err))
		}
		spec.Dir = dir
	}
	if req.Pty != nil {
		size, err := ptySize(req.GetPty())
		if err != nil {
			return process.Spec{}, err
		}
		spec.PTY = &size
	}
	return spec, nil
}

func ptySize(p *envdprocess.PTY) (process.PTYSize, error) {
	rows, cols := p.GetSize().GetRows(), p.GetSize().GetCols()
	if rows == 0 || cols == 0 || rows > math.MaxUint16 || cols > math.MaxUint16 {
		return process.PTYSize{}, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(
			"pty.size: rows and cols must be between 1 and 65535, got %dx%d", rows, cols))
	}
	return process.PTYSize{Rows: uint16(rows), Cols: uint16(cols)}, nil
}

// inputBytes is the input's bytes: the agent writes to a process's terminal when it has one and
// to its stdin otherwise, whichever field the client set.
func inputBytes(in *envdprocess.ProcessInput) []byte {
	if in.GetPty() != nil {
		return in.GetPty()
	}
	return in.GetStdin()
}

// register records p until it exits and returns its pid.
func (s *ProcessService) register(p *process.Process, config *envdprocess.ProcessConfig, tag *string) uint32 {
	pid := uint32(p.PID())
	s.mu.Lock()
	s.seq++
	st := &started{p: p, config: config, tag: tag, seq: s.seq}
	s.running[pid] = st
	s.mu.Unlock()
	go func() {
		<-p.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.running[pid] == st {
			delete(s.running, pid)
		}
	}()
	return pid
}

// find returns the running process sel names: by pid, or the oldest with the tag.
func (s *ProcessService) find(sel *envdprocess.ProcessSelector) (*started, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch sel.GetSelector().(type) {
	case *envdprocess.ProcessSelector_Pid:
		if st, ok := s.running[sel.GetPid()]; ok {
			return st, nil
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf(
			"process with pid %d not found: it has exited, or was not started through this API (List shows the running ones)", sel.GetPid()))
	case *envdprocess.ProcessSelector_Tag:
		var found *started
		for _, st := range s.running {
			if st.tag != nil && *st.tag == sel.GetTag() && (found == nil || st.seq < found.seq) {
				found = st
			}
		}
		if found != nil {
			return found, nil
		}
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf(
			"process with tag %q not found: no running process was started with it", sel.GetTag()))
	}
	return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process: select a process by pid or tag"))
}

func startEvent(pid uint32) *envdprocess.ProcessEvent {
	return &envdprocess.ProcessEvent{Event: &envdprocess.ProcessEvent_Start{Start: &envdprocess.ProcessEvent_StartEvent{Pid: pid}}}
}

func keepaliveEvent() *envdprocess.ProcessEvent {
	return &envdprocess.ProcessEvent{Event: &envdprocess.ProcessEvent_Keepalive{Keepalive: &envdprocess.ProcessEvent_KeepAlive{}}}
}

// sendEvent maps an event of the agent's process onto envd's stream.
func sendEvent(out *sender[*envdprocess.ProcessEvent], ev process.Event) error {
	switch {
	case ev.Output != nil:
		data := &envdprocess.ProcessEvent_DataEvent{}
		switch ev.Output.Stream {
		case process.Stderr:
			data.Output = &envdprocess.ProcessEvent_DataEvent_Stderr{Stderr: ev.Output.Data}
		case process.PTY:
			data.Output = &envdprocess.ProcessEvent_DataEvent_Pty{Pty: ev.Output.Data}
		default:
			data.Output = &envdprocess.ProcessEvent_DataEvent_Stdout{Stdout: ev.Output.Data}
		}
		return out.send(&envdprocess.ProcessEvent{Event: &envdprocess.ProcessEvent_Data{Data: data}})
	case ev.Exit != nil:
		return out.send(&envdprocess.ProcessEvent{Event: &envdprocess.ProcessEvent_End{End: endEvent(*ev.Exit)}})
	default: // a gap, under flow control only once the stream ended; never pass it on as if nothing was lost
		return connect.NewError(connect.CodeDataLoss, fmt.Errorf(
			"%d bytes of the process's %s were lost before this stream read them", ev.Dropped.Length, ev.Dropped.Stream))
	}
}

// endEvent describes how a process ended the way envd does: an exit code, or -1 and the signal's
// name when a signal killed it (its timeout included), and the same text as error unless it
// exited with 0 (E2B's SDKs raise their command error with it).
func endEvent(exit process.ExitStatus) *envdprocess.ProcessEvent_EndEvent {
	end := &envdprocess.ProcessEvent_EndEvent{ExitCode: int32(exit.Code), Exited: true, Status: fmt.Sprintf("exit status %d", exit.Code)}
	if exit.Signal != 0 {
		end.ExitCode, end.Exited, end.Status = -1, false, "signal: "+exit.Signal.String()
	}
	if end.ExitCode != 0 || !end.Exited {
		end.Error = &end.Status
	}
	return end
}
