package sandbox

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/metrics"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

func TestDecideIdle(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return ptr.To(metav1.NewTime(now.Add(d))) }
	ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	const after = 10 * time.Minute
	ready := func(ltt time.Duration) metav1.Condition {
		return metav1.Condition{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue,
			Reason: sandboxv1beta1.SandboxReasonDependenciesReady, LastTransitionTime: *at(ltt)}
	}
	watched := func(last time.Duration) *sandboxv1beta1.IdleStatus {
		return &sandboxv1beta1.IdleStatus{LastActiveTime: at(last), Reason: sandboxv1beta1.IdleReasonIdle, Message: "watching"}
	}
	quiet := func() (*agentv1.GetActivityResponse, error) { return &agentv1.GetActivityResponse{}, nil }
	answer := func(r *agentv1.GetActivityResponse) func() (*agentv1.GetActivityResponse, error) {
		return func() (*agentv1.GetActivityResponse, error) { return r, nil }
	}
	fail := func(err error) func() (*agentv1.GetActivityResponse, error) {
		return func() (*agentv1.GetActivityResponse, error) { return nil, err }
	}
	sleeper := &agentv1.GetActivityResponse{RunningProcessCount: 2, RunningProcesses: []*agentv1.RunningProcess{
		{Pid: 42, Command: "sleep 600"}}}

	cases := map[string]struct {
		noPolicy    bool
		ignore      bool
		suspended   bool
		annotations map[string]string
		labels      map[string]string
		ready       *metav1.Condition
		prev        *sandboxv1beta1.IdleStatus
		noAgent     bool
		agent       func() (*agentv1.GetActivityResponse, error)

		wantAsked   bool
		wantSuspend bool
		wantReason  string // "" with wantNil: no status.idle
		wantNil     bool
		wantLast    *metav1.Time // nil: not checked
		wantKept    bool         // status.idle is prev, unchanged
		wantRequeue time.Duration
		wantMessage string // a part of the message
	}{
		"no policy: no status, no timer": {noPolicy: true, ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour), wantNil: true},
		"first Ready pass starts the clock": {ready: ptr.To(ready(-time.Second)),
			wantReason: sandboxv1beta1.IdleReasonIdle, wantLast: at(0), wantRequeue: after, wantMessage: "suspends after 10m0s"},
		"not Ready: the status stays, no timer": {prev: watched(-time.Hour), wantKept: true},
		"before the deadline: a timer at lastActiveTime + suspendAfter": {ready: ptr.To(ready(-time.Hour)), prev: watched(-4 * time.Minute),
			wantKept: true, wantRequeue: 6 * time.Minute},
		"a fresh annotation moves the deadline": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour),
			annotations: map[string]string{sandboxv1beta1.LastActivityAnnotation: ago(time.Minute)}, wantKept: true, wantRequeue: 9 * time.Minute},
		"a recent Ready (a resume) moves the deadline": {ready: ptr.To(ready(-2 * time.Minute)), prev: watched(-time.Hour),
			wantKept: true, wantRequeue: 8 * time.Minute},
		"an unparsable annotation is ignored": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour), agent: quiet,
			annotations: map[string]string{sandboxv1beta1.LastActivityAnnotation: "yesterday"}, wantAsked: true, wantSuspend: true,
			wantReason: sandboxv1beta1.IdleReasonSuspended, wantLast: at(-time.Hour)},
		"at the deadline, a quiet agent: suspend": {ready: ptr.To(ready(-time.Hour)), prev: watched(-after), agent: quiet,
			wantAsked: true, wantSuspend: true, wantReason: sandboxv1beta1.IdleReasonSuspended, wantLast: at(-after), wantMessage: "after 10m0s without activity"},
		"open requests keep it awake": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour),
			agent: answer(&agentv1.GetActivityResponse{OpenRequests: 2}), wantAsked: true,
			wantReason: sandboxv1beta1.IdleReasonOpenConnections, wantLast: at(0), wantRequeue: after, wantMessage: "2 requests open"},
		"a request after the last activity keeps it awake": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour),
			agent: answer(&agentv1.GetActivityResponse{LastRequestTime: timestamppb.New(now.Add(-30 * time.Minute))}), wantAsked: true,
			wantReason: sandboxv1beta1.IdleReasonRequests, wantLast: at(0), wantRequeue: after},
		"a request before the last activity does not": {ready: ptr.To(ready(-time.Hour)), prev: watched(-20 * time.Minute),
			agent: answer(&agentv1.GetActivityResponse{LastRequestTime: timestamppb.New(now.Add(-30 * time.Minute))}), wantAsked: true,
			wantSuspend: true, wantReason: sandboxv1beta1.IdleReasonSuspended},
		"running processes keep it awake, named": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour), agent: answer(sleeper),
			wantAsked: true, wantReason: sandboxv1beta1.IdleReasonRunningProcesses, wantLast: at(0), wantRequeue: after,
			wantMessage: "2 processes running: sleep 600 (pid 42) and 1 more"},
		"running processes with Ignore: suspend": {ignore: true, ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour), agent: answer(sleeper),
			wantAsked: true, wantSuspend: true, wantReason: sandboxv1beta1.IdleReasonSuspended},
		"an unreachable agent never suspends": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour),
			agent: fail(connect.NewError(connect.CodeUnavailable, errors.New("connection refused"))), wantAsked: true,
			wantReason: sandboxv1beta1.IdleReasonAgentUnreachable, wantLast: at(-time.Hour), wantRequeue: agentRetry, wantMessage: "connection refused"},
		"a deadline-exceeded agent never suspends": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour),
			agent: fail(context.DeadlineExceeded), wantAsked: true, wantReason: sandboxv1beta1.IdleReasonAgentUnreachable, wantRequeue: agentRetry},
		"an agent without ActivityService counts as quiet": {ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour),
			agent: fail(connect.NewError(connect.CodeUnimplemented, errors.New("no"))), wantAsked: true,
			wantSuspend: true, wantReason: sandboxv1beta1.IdleReasonSuspended},
		"no agent: router activity only": {noAgent: true, ready: ptr.To(ready(-time.Hour)), prev: watched(-time.Hour),
			wantSuspend: true, wantReason: sandboxv1beta1.IdleReasonSuspended},
		"an unclaimed warm member waits in the pool": {ready: ptr.To(ready(-time.Hour)),
			labels: map[string]string{sandboxv1beta1.WarmPoolSandboxLabel: "abc"}, agent: quiet, wantReason: sandboxv1beta1.IdleReasonWaitingInPool},
		"WaitingInPool is written once": {ready: ptr.To(ready(-time.Hour)), labels: map[string]string{sandboxv1beta1.WarmPoolSandboxLabel: "abc"},
			prev: &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonWaitingInPool, Message: "old words"}, wantKept: true},
		"a claimed member starts its clock at the claim": {ready: ptr.To(ready(-time.Hour)),
			labels:     map[string]string{sandboxv1beta1.WarmPoolSandboxLabel: "abc", sandboxv1beta1.ClaimUIDLabel: "claim-uid"},
			prev:       &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonWaitingInPool},
			wantReason: sandboxv1beta1.IdleReasonIdle, wantLast: at(0), wantRequeue: after},
		"suspended by the idle policy: reason Suspended, lastActiveTime kept": {suspended: true, prev: watched(-time.Hour),
			annotations: map[string]string{sandboxv1beta1.SuspendedByAnnotation: sandboxv1beta1.SuspendedByIdle},
			wantReason:  sandboxv1beta1.IdleReasonSuspended, wantLast: at(-time.Hour)},
		"suspended by a user: the status stays": {suspended: true, prev: watched(-time.Hour), wantKept: true},
		"resumed after an idle suspend: woken by requests, now": {ready: ptr.To(ready(-time.Hour)),
			prev:       &sandboxv1beta1.IdleStatus{LastActiveTime: at(-time.Hour), Reason: sandboxv1beta1.IdleReasonSuspended},
			wantReason: sandboxv1beta1.IdleReasonRequests, wantLast: at(0), wantMessage: "Resumed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := testSandbox().Obj()
			if !tc.noPolicy {
				sb.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: after},
					RunningProcesses: sandboxv1beta1.IdleProcessPolicyKeepAwake}
				if tc.ignore {
					sb.Spec.IdlePolicy.RunningProcesses = sandboxv1beta1.IdleProcessPolicyIgnore
				}
			}
			if tc.suspended {
				sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
			}
			sb.Annotations, sb.Labels = tc.annotations, tc.labels
			if tc.ready != nil {
				sb.Status.Conditions = []metav1.Condition{*tc.ready}
			}
			sb.Status.Idle = tc.prev.DeepCopy()
			asked := false
			var ask askAgent
			if !tc.noAgent {
				ask = func() (*agentv1.GetActivityResponse, error) {
					asked = true
					if tc.agent == nil {
						t.Fatal("the agent was asked before the deadline")
					}
					return tc.agent()
				}
			}

			v := decideIdle(sb, now, ask)

			if asked != tc.wantAsked {
				t.Errorf("agent asked = %v, want %v", asked, tc.wantAsked)
			}
			if v.suspend != tc.wantSuspend {
				t.Errorf("suspend = %v, want %v", v.suspend, tc.wantSuspend)
			}
			if v.requeue != tc.wantRequeue {
				t.Errorf("requeue = %v, want %v", v.requeue, tc.wantRequeue)
			}
			switch {
			case tc.wantNil:
				if v.status != nil {
					t.Errorf("status.idle = %+v, want none", v.status)
				}
				return
			case tc.wantKept:
				if diff := cmp.Diff(tc.prev, v.status); diff != "" {
					t.Errorf("status.idle changed (-prev +got):\n%s", diff)
				}
				return
			case v.status == nil:
				t.Fatalf("no status.idle, want reason %s", tc.wantReason)
			}
			if v.status.Reason != tc.wantReason {
				t.Errorf("reason = %q (%s), want %q", v.status.Reason, v.status.Message, tc.wantReason)
			}
			if tc.wantLast != nil && (v.status.LastActiveTime == nil || !v.status.LastActiveTime.Equal(tc.wantLast)) {
				t.Errorf("lastActiveTime = %v, want %v", v.status.LastActiveTime, tc.wantLast)
			}
			if !strings.Contains(v.status.Message, tc.wantMessage) {
				t.Errorf("message = %q, want it to contain %q", v.status.Message, tc.wantMessage)
			}
		})
	}
}

// A long process list is cut to the CRD's limit, so the status write is not refused.
func TestProcessesMessageFitsTheStatus(t *testing.T) {
	act := &agentv1.GetActivityResponse{RunningProcessCount: 16}
	for i := range 16 {
		act.RunningProcesses = append(act.RunningProcesses, &agentv1.RunningProcess{Pid: int32(i), Command: strings.Repeat("x", 256)})
	}
	if msg := processesMessage(act); len(msg) > maxIdleMessage || !strings.HasPrefix(msg, "16 processes running: xxx") {
		t.Errorf("message of %d bytes starting %.40q; want at most %d, naming the processes", len(msg), msg, maxIdleMessage)
	}
}

func TestCountSuspends(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cond := func(s metav1.ConditionStatus, reason string, ltt time.Time) *sandboxv1beta1.SandboxStatus {
		return &sandboxv1beta1.SandboxStatus{Conditions: []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionSuspended,
			Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(ltt)}}}
	}
	running := cond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotSuspended, now.Add(-time.Hour))
	suspending := cond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonPodTerminating, now)
	idleSuspended := cond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated, now.Add(-90*time.Second))
	idleSuspended.Idle = &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonSuspended}
	woken := cond(metav1.ConditionFalse, sandboxv1beta1.SandboxReasonNotSuspended, now)
	woken.Idle = &sandboxv1beta1.IdleStatus{Reason: sandboxv1beta1.IdleReasonRequests}
	byIdle := map[string]string{sandboxv1beta1.SuspendedByAnnotation: sandboxv1beta1.SuspendedByIdle}

	cases := map[string]struct {
		annotations     map[string]string
		before, after   *sandboxv1beta1.SandboxStatus
		idle, user      float64
		suspendedSecond float64
	}{
		"a user suspend":                      {before: running, after: suspending, user: 1},
		"an idle suspend":                     {annotations: byIdle, before: running, after: suspending, idle: 1},
		"created suspended: not a transition": {before: &sandboxv1beta1.SandboxStatus{}, after: suspending},
		"still suspending: counted before":    {annotations: byIdle, before: suspending, after: idleSuspended},
		"woken after 90s of idle suspend":     {before: idleSuspended, after: woken, suspendedSecond: 90},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			idle0 := suspendMetric(t, "kubox_sandbox_suspends_total", metrics.SuspendReasonIdle)
			user0 := suspendMetric(t, "kubox_sandbox_suspends_total", metrics.SuspendReasonUser)
			secs0 := suspendMetric(t, "kubox_sandbox_idle_suspended_seconds_total", "")
			sb := testSandbox().Obj()
			sb.Annotations = tc.annotations
			countSuspends(sb, tc.before, tc.after, now)
			if got := suspendMetric(t, "kubox_sandbox_suspends_total", metrics.SuspendReasonIdle) - idle0; got != tc.idle {
				t.Errorf("reason=idle += %v, want %v", got, tc.idle)
			}
			if got := suspendMetric(t, "kubox_sandbox_suspends_total", metrics.SuspendReasonUser) - user0; got != tc.user {
				t.Errorf("reason=user += %v, want %v", got, tc.user)
			}
			if got := suspendMetric(t, "kubox_sandbox_idle_suspended_seconds_total", "") - secs0; got != tc.suspendedSecond {
				t.Errorf("idle suspended seconds += %v, want %v", got, tc.suspendedSecond)
			}
		})
	}
}

// fakeActivity is an agent's ActivityService that checks the caller's token.
type fakeActivity struct {
	agentv1connect.UnimplementedActivityServiceHandler
	token string
	resp  *agentv1.GetActivityResponse
}

func (f *fakeActivity) GetActivity(_ context.Context, req *connect.Request[agentv1.GetActivityRequest]) (*connect.Response[agentv1.GetActivityResponse], error) {
	if req.Header().Get(contract.AuthorizationHeader) != contract.BearerScheme+" "+f.token {
		return nil, connect.NewError(connect.CodeUnauthenticated, errors.New("wrong token"))
	}
	return connect.NewResponse(f.resp), nil
}

// The controller's client reaches the agent at the first Pod IP and the agent port of the
// status, with the token derived for the sandbox's UID.
func TestAgentActivityCallsTheSandboxsAgent(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	sb := testSandbox().Obj()
	sb.UID = types.UID("uid-1")
	agent := &fakeActivity{token: contract.DeriveAgentToken(key, sb.UID), resp: &agentv1.GetActivityResponse{OpenRequests: 3}}
	mux := http.NewServeMux()
	mux.Handle(agentv1connect.NewActivityServiceHandler(agent))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	sb.Status.PodIPs = []string{host, "fd00::1"}
	sb.Status.Agent = &sandboxv1beta1.AgentStatus{Port: int32(p)}

	got, err := newAgentActivity(key).GetActivity(t.Context(), sb)
	if err != nil || got.GetOpenRequests() != 3 {
		t.Fatalf("GetActivity = %v, %v; want 3 open requests", got, err)
	}
	other := sb.DeepCopy()
	other.UID = "uid-2"
	if _, err := newAgentActivity(key).GetActivity(t.Context(), other); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("another sandbox's token: %v, want Unauthenticated", err)
	}
	sb.Status.Agent = nil
	if _, err := newAgentActivity(key).GetActivity(t.Context(), sb); err == nil {
		t.Error("GetActivity without an agent port in the status succeeded")
	}
}

// suspendMetric reads a suspend metric from controller-runtime's registry, where the controller
// registers it: the counter called name with label reason (all series when reason is empty).
func suspendMetric(t *testing.T, name, reason string) float64 {
	t.Helper()
	if err := metrics.RegisterSuspendMetrics(); err != nil {
		t.Fatal(err)
	}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if reason == "" || slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == "reason" && l.GetValue() == reason
			}) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// quietAgent answers every sandbox: nothing is going on.
type quietAgent struct{}

func (quietAgent) GetActivity(context.Context, *sandboxv1beta1.Sandbox) (*agentv1.GetActivityResponse, error) {
	return &agentv1.GetActivityResponse{}, nil
}

// idleReconciler returns a Reconciler on a fake API holding sb, with a quiet agent.
func idleReconciler(t *testing.T, now time.Time, sb *sandboxv1beta1.Sandbox) (*Reconciler, client.Client, *events.FakeRecorder) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(sb).Build()
	rec := events.NewFakeRecorder(10)
	return &Reconciler{client: c, recorder: rec, clock: clocktesting.NewFakePassiveClock(now), activity: quietAgent{}}, c, rec
}

// idleAtDeadline is a Ready sandbox whose suspendAfter has passed since its last activity.
func idleAtDeadline(now time.Time) *sandboxv1beta1.Sandbox {
	sb := testSandbox().Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{}
	sb.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Minute}}
	sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue,
		Reason: sandboxv1beta1.SandboxReasonDependenciesReady, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	sb.Status.Idle = &sandboxv1beta1.IdleStatus{LastActiveTime: ptr.To(metav1.NewTime(now.Add(-time.Minute))), Reason: sandboxv1beta1.IdleReasonIdle}
	return sb
}

func TestCheckIdleSuspendsInOnePatch(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r, c, rec := idleReconciler(t, now, idleAtDeadline(now))
	sb := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: testName}, sb); err != nil {
		t.Fatal(err)
	}
	obs := &observed{}
	if _, err := r.checkIdle(t.Context(), sb, obs); err != nil {
		t.Fatalf("checkIdle: %v", err)
	}
	stored := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended ||
		stored.Annotations[sandboxv1beta1.SuspendedByAnnotation] != sandboxv1beta1.SuspendedByIdle {
		t.Errorf("stored operatingMode %q, annotations %v; want Suspended by %s", stored.Spec.OperatingMode, stored.Annotations, sandboxv1beta1.SuspendedByIdle)
	}
	if sb.ResourceVersion != stored.ResourceVersion || !suspended(sb) {
		t.Errorf("the pass goes on with resourceVersion %s, operatingMode %q; want the patched Sandbox's (%s)", sb.ResourceVersion, sb.Spec.OperatingMode, stored.ResourceVersion)
	}
	if obs.idle == nil || obs.idle.Reason != sandboxv1beta1.IdleReasonSuspended {
		t.Errorf("status.idle to write = %+v, want reason Suspended", obs.idle)
	}
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, EventIdleSuspended) {
			t.Errorf("event %q, want %s", ev, EventIdleSuspended)
		}
	default:
		t.Errorf("no %s event", EventIdleSuspended)
	}
}

// A request that moved the annotation after the pass read the Sandbox wins: the suspend's patch,
// made at the resourceVersion read, fails and nothing changes.
func TestCheckIdleLosesToANewerVersion(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r, c, rec := idleReconciler(t, now, idleAtDeadline(now))
	stale := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: testName}, stale); err != nil {
		t.Fatal(err)
	}
	fresh := stale.DeepCopy()
	fresh.Annotations = map[string]string{sandboxv1beta1.LastActivityAnnotation: now.Format(time.RFC3339)}
	if err := c.Update(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := r.checkIdle(t.Context(), stale, &observed{}); !errors.Is(err, errIdleConflict) {
		t.Fatalf("checkIdle on a stale Sandbox: %v, want errIdleConflict", err)
	}
	stored := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(stale), stored); err != nil {
		t.Fatal(err)
	}
	if suspended(stored) || suspended(stale) {
		t.Errorf("operatingMode stored %q, in the pass %q; want both unchanged", stored.Spec.OperatingMode, stale.Spec.OperatingMode)
	}
	if len(rec.Events) != 0 {
		t.Errorf("an event was recorded for a suspend that did not happen: %s", <-rec.Events)
	}
}

// A sandbox resumed by another client than the router keeps no suspended-by annotation, so a
// later user suspend is not taken for the idle policy's.
func TestCheckIdleClearsSuspendedByOnARunningSandbox(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sb := idleAtDeadline(now)
	sb.Annotations = map[string]string{sandboxv1beta1.SuspendedByAnnotation: sandboxv1beta1.SuspendedByIdle, "keep": "me"}
	sb.Status.Idle.Reason = sandboxv1beta1.IdleReasonSuspended
	r, c, _ := idleReconciler(t, now, sb)
	got := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), got); err != nil {
		t.Fatal(err)
	}
	obs := &observed{}
	if _, err := r.checkIdle(t.Context(), got, obs); err != nil {
		t.Fatalf("checkIdle: %v", err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), got); err != nil {
		t.Fatal(err)
	}
	if _, set := got.Annotations[sandboxv1beta1.SuspendedByAnnotation]; set || got.Annotations["keep"] != "me" {
		t.Errorf("annotations = %v, want suspended-by removed and the others kept", got.Annotations)
	}
	if obs.idle == nil || obs.idle.Reason != sandboxv1beta1.IdleReasonRequests {
		t.Errorf("status.idle to write = %+v, want reason Requests (woken)", obs.idle)
	}
}
