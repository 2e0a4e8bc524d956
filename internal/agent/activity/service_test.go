package activity

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

func TestGetActivityReportsRequestsProcessesAndTheStart(t *testing.T) {
	var procs []fakeProc
	procs = append(procs, fakeProc{pid: 1, ppid: 0, pgrp: 1, cmdline: "agent\x00"})
	for pid := 100; pid < 120; pid++ {
		procs = append(procs, fakeProc{pid: pid, ppid: 1, pgrp: pid, cmdline: fmt.Sprintf("job\x00%d\x00", pid)})
	}
	root := fakeProcRoot(t, 1_700_000_000, procs...)
	c := &clock{t: time.Unix(5000, 0)}
	tr := NewTracker(c.now)
	tr.begin()
	started := time.Unix(4000, 0)
	s := NewService(tr, Processes{Root: root, Self: 1}, started)
	res, err := s.GetActivity(context.Background(), connect.NewRequest(&agentv1.GetActivityRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Msg
	if m.GetOpenRequests() != 1 || !m.GetLastRequestTime().AsTime().Equal(time.Unix(5000, 0)) {
		t.Errorf("requests: %d open, last %s", m.GetOpenRequests(), m.GetLastRequestTime().AsTime())
	}
	if m.GetRunningProcessCount() != 20 || len(m.GetRunningProcesses()) != MaxListedProcesses {
		t.Errorf("processes: count %d, %d listed; want 20 and %d", m.GetRunningProcessCount(), len(m.GetRunningProcesses()), MaxListedProcesses)
	}
	if p := m.GetRunningProcesses()[0]; p.GetPid() != 100 || p.GetCommand() != "job 100" || p.GetStartTime() == nil {
		t.Errorf("first process %v", p)
	}
	if !m.GetAgentStartTime().AsTime().Equal(started) {
		t.Errorf("agent start %s, want %s", m.GetAgentStartTime().AsTime(), started)
	}
}

func TestGetActivityWithoutRequestsLeavesTheTimeUnset(t *testing.T) {
	root := fakeProcRoot(t, 0, fakeProc{pid: 1, ppid: 0, pgrp: 1, cmdline: "agent\x00"})
	s := NewService(NewTracker(nil), Processes{Root: root, Self: 1}, time.Now())
	res, err := s.GetActivity(context.Background(), connect.NewRequest(&agentv1.GetActivityRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Msg.LastRequestTime != nil || res.Msg.GetRunningProcessCount() != 0 {
		t.Errorf("an idle agent reports %v", res.Msg)
	}
}
