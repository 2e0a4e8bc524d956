package process

import (
	"context"
	"math"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// Handler serves kubox.agent.v1.ProcessService over a Manager. Mount it with
// agentv1connect.NewProcessServiceHandler; authentication wraps the mux elsewhere.
type Handler struct {
	m *Manager
}

var _ agentv1connect.ProcessServiceHandler = (*Handler)(nil)

// NewHandler returns a Handler over m.
func NewHandler(m *Manager) *Handler { return &Handler{m: m} }

// StartProcess implements agentv1connect.ProcessServiceHandler.
func (h *Handler) StartProcess(ctx context.Context, req *connect.Request[agentv1.StartProcessRequest], stream *connect.ServerStream[agentv1.StartProcessResponse]) error {
	spec, err := specFromProto(req.Msg.GetSpec())
	if err != nil {
		return err
	}
	if size := req.Msg.GetPty(); size != nil {
		s, err := ptySizeFromProto("pty", size)
		if err != nil {
			return err
		}
		spec.PTY = &s
	}
	spec.Stdin = req.Msg.GetStdin()
	spec.FlowControl = req.Msg.GetFlowControl()
	p, err := h.m.Start(spec)
	if err != nil {
		return err
	}
	defer p.ReleaseHold() // when Follow did not start
	started := &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Started{Started: &agentv1.ProcessStarted{
		ProcessId: p.ID(), Pid: int32(p.PID()),
	}}}
	if err := stream.Send(&agentv1.StartProcessResponse{Event: started}); err != nil {
		return err
	}
	return p.Follow(ctx, 0, 0, spec.FlowControl, func(ev Event) error {
		return stream.Send(&agentv1.StartProcessResponse{Event: eventToProto(ev)})
	})
}

// RunProcess implements agentv1connect.ProcessServiceHandler.
func (h *Handler) RunProcess(ctx context.Context, req *connect.Request[agentv1.RunProcessRequest]) (*connect.Response[agentv1.RunProcessResponse], error) {
	spec, err := specFromProto(req.Msg.GetSpec())
	if err != nil {
		return nil, err
	}
	res, err := h.m.Run(ctx, spec, req.Msg.GetStdin(), req.Msg.GetMaxOutputBytes())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&agentv1.RunProcessResponse{
		ProcessId:       res.ID,
		Pid:             int32(res.PID),
		Stdout:          res.Stdout,
		Stderr:          res.Stderr,
		StdoutTruncated: res.StdoutTruncated,
		StderrTruncated: res.StderrTruncated,
		StdoutBytes:     res.StdoutBytes,
		StderrBytes:     res.StderrBytes,
		Exit:            exitToProto(res.Exit),
	}), nil
}

// SendInput implements agentv1connect.ProcessServiceHandler.
func (h *Handler) SendInput(ctx context.Context, req *connect.Request[agentv1.SendInputRequest]) (*connect.Response[agentv1.SendInputResponse], error) {
	p, err := h.m.Get(req.Msg.GetProcessId())
	if err != nil {
		return nil, err
	}
	if err := p.Input(ctx, req.Msg.GetData(), req.Msg.GetCloseStdin()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&agentv1.SendInputResponse{}), nil
}

// SendSignal implements agentv1connect.ProcessServiceHandler.
func (h *Handler) SendSignal(_ context.Context, req *connect.Request[agentv1.SendSignalRequest]) (*connect.Response[agentv1.SendSignalResponse], error) {
	sig, err := ParseSignal(req.Msg.GetSignal())
	if err != nil {
		return nil, invalid("signal: %v", err)
	}
	p, err := h.m.Get(req.Msg.GetProcessId())
	if err != nil {
		return nil, err
	}
	if err := p.Signal(sig); err != nil {
		return nil, err
	}
	return connect.NewResponse(&agentv1.SendSignalResponse{}), nil
}

// ResizePty implements agentv1connect.ProcessServiceHandler.
func (h *Handler) ResizePty(_ context.Context, req *connect.Request[agentv1.ResizePtyRequest]) (*connect.Response[agentv1.ResizePtyResponse], error) {
	size, err := ptySizeFromProto("size", req.Msg.GetSize())
	if err != nil {
		return nil, err
	}
	p, err := h.m.Get(req.Msg.GetProcessId())
	if err != nil {
		return nil, err
	}
	if err := p.Resize(size); err != nil {
		return nil, err
	}
	return connect.NewResponse(&agentv1.ResizePtyResponse{}), nil
}

// ListProcesses implements agentv1connect.ProcessServiceHandler.
func (h *Handler) ListProcesses(_ context.Context, req *connect.Request[agentv1.ListProcessesRequest]) (*connect.Response[agentv1.ListProcessesResponse], error) {
	infos := h.m.List(req.Msg.GetIncludeExited())
	res := &agentv1.ListProcessesResponse{Processes: make([]*agentv1.ProcessInfo, 0, len(infos))}
	for _, info := range infos {
		res.Processes = append(res.Processes, infoToProto(info))
	}
	return connect.NewResponse(res), nil
}

// AttachProcess implements agentv1connect.ProcessServiceHandler.
func (h *Handler) AttachProcess(ctx context.Context, req *connect.Request[agentv1.AttachProcessRequest], stream *connect.ServerStream[agentv1.AttachProcessResponse]) error {
	p, err := h.m.Get(req.Msg.GetProcessId())
	if err != nil {
		return err
	}
	if err := p.CheckOffsets(req.Msg.GetStdoutOffset(), req.Msg.GetStderrOffset()); err != nil {
		return err
	}
	info := &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Attached{Attached: infoToProto(p.Info())}}
	if err := stream.Send(&agentv1.AttachProcessResponse{Event: info}); err != nil {
		return err
	}
	return p.Follow(ctx, req.Msg.GetStdoutOffset(), req.Msg.GetStderrOffset(), req.Msg.GetFlowControl(), func(ev Event) error {
		return stream.Send(&agentv1.AttachProcessResponse{Event: eventToProto(ev)})
	})
}

func specFromProto(s *agentv1.ProcessSpec) (Spec, error) {
	spec := Spec{
		Argv:         s.GetArgv(),
		ShellCommand: s.GetShellCommand(),
		Env:          s.GetEnv(),
		Dir:          s.GetCwd(),
		Tag:          s.GetTag(),
	}
	if t := s.GetTimeout(); t != nil {
		if err := t.CheckValid(); err != nil {
			return Spec{}, invalid("spec.timeout: %v", err)
		}
		spec.Timeout = t.AsDuration()
	}
	return spec, nil
}

func ptySizeFromProto(field string, s *agentv1.PtySize) (PTYSize, error) {
	if s.GetRows() == 0 || s.GetCols() == 0 || s.GetRows() > math.MaxUint16 || s.GetCols() > math.MaxUint16 {
		return PTYSize{}, invalid("%s: rows and cols must be between 1 and 65535, got %dx%d", field, s.GetRows(), s.GetCols())
	}
	return PTYSize{Rows: uint16(s.GetRows()), Cols: uint16(s.GetCols())}, nil
}

func streamToProto(s Stream) agentv1.OutputStream {
	switch s {
	case Stdout:
		return agentv1.OutputStream_OUTPUT_STREAM_STDOUT
	case Stderr:
		return agentv1.OutputStream_OUTPUT_STREAM_STDERR
	case PTY:
		return agentv1.OutputStream_OUTPUT_STREAM_PTY
	}
	return agentv1.OutputStream_OUTPUT_STREAM_UNSPECIFIED
}

func eventToProto(ev Event) *agentv1.ProcessEvent {
	switch {
	case ev.Output != nil:
		return &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Output{Output: &agentv1.ProcessOutput{
			Stream: streamToProto(ev.Output.Stream), Offset: ev.Output.Offset, Data: ev.Output.Data,
		}}}
	case ev.Dropped != nil:
		return &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Dropped{Dropped: &agentv1.OutputDropped{
			Stream: streamToProto(ev.Dropped.Stream), Offset: ev.Dropped.Offset, Length: ev.Dropped.Length,
		}}}
	default:
		return &agentv1.ProcessEvent{Event: &agentv1.ProcessEvent_Exited{Exited: exitToProto(*ev.Exit)}}
	}
}

func exitToProto(e ExitStatus) *agentv1.ProcessExit {
	out := &agentv1.ProcessExit{ExitCode: int32(e.Code), TimedOut: e.TimedOut, ExitedAt: timestamppb.New(e.At)}
	if e.Signal != 0 {
		out.Signal = SignalName(e.Signal)
	}
	return out
}

func infoToProto(i Info) *agentv1.ProcessInfo {
	out := &agentv1.ProcessInfo{
		ProcessId:   i.ID,
		Pid:         int32(i.PID),
		Argv:        i.Argv,
		Tag:         i.Tag,
		Pty:         i.PTY,
		StartedAt:   timestamppb.New(i.Started),
		StdoutBytes: i.StdoutBytes,
		StderrBytes: i.StderrBytes,
		StdinOpen:   i.StdinOpen,
	}
	if i.Exit != nil {
		out.Exit = exitToProto(*i.Exit)
	}
	return out
}
