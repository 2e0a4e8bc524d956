package activity

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// MaxListedProcesses is how many processes GetActivity lists (it counts them all).
const MaxListedProcesses = 16

// Service implements kubox.agent.v1.ActivityService.
type Service struct {
	tracker *Tracker
	procs   Processes
	started time.Time
}

var _ agentv1connect.ActivityServiceHandler = (*Service)(nil)

// NewService reports tracker's requests and procs' processes for an agent started at started.
func NewService(tracker *Tracker, procs Processes, started time.Time) *Service {
	return &Service{tracker: tracker, procs: procs, started: started}
}

// GetActivity implements ActivityService.GetActivity. A /proc that cannot be read is an
// Internal error rather than "no processes": the controller must not suspend on a blind look.
func (s *Service) GetActivity(context.Context, *connect.Request[agentv1.GetActivityRequest]) (*connect.Response[agentv1.GetActivityResponse], error) {
	procs, err := s.procs.Running()
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	last, open := s.tracker.Snapshot()
	resp := &agentv1.GetActivityResponse{
		OpenRequests:        int32(open),
		RunningProcessCount: int32(len(procs)),
		AgentStartTime:      timestamppb.New(s.started),
	}
	if !last.IsZero() {
		resp.LastRequestTime = timestamppb.New(last)
	}
	for _, p := range procs[:min(len(procs), MaxListedProcesses)] {
		rp := &agentv1.RunningProcess{Pid: int32(p.PID), Command: p.Command}
		if !p.Start.IsZero() {
			rp.StartTime = timestamppb.New(p.Start)
		}
		resp.RunningProcesses = append(resp.RunningProcesses, rp)
	}
	return connect.NewResponse(resp), nil
}
