package sandbox

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/metrics"
	"github.com/kubox-dev/kubox/internal/testutil"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// suspendAfter is the shortest idle policy the API allows.
const suspendAfter = 30 * time.Second

// idleWait bounds the wait for an idle suspend: two checks of suspendAfter (the first may find
// the test's own requests) and the rest of the pass. It bounds a failed test, nothing else.
const idleWait = 3*suspendAfter + framework.DefaultTimeout

// hostProcesses is the runningProcesses of the tests about requests. The tests' agents run in
// the test's process and see every process of the test host (an API server, etcd, go), which
// would keep a KeepAwake sandbox awake for ever.
const hostProcesses = sandboxv1beta1.IdleProcessPolicyIgnore

// idleEnv is a namespace with the controller, a Kubelet giving Pods loopback IPs, and a real
// kubox-agent for every sandbox.
type idleEnv struct {
	ns   string
	key  []byte
	port int
}

func startIdleEnv(t *testing.T) *idleEnv {
	t.Helper()
	configure, key := withAgent(t)
	e := &idleEnv{ns: env.NewNamespace(t), key: key, port: framework.FreePort(t)}
	env.StartKubelet(t, e.ns, framework.WithLoopbackPodIPs())
	env.ServeSandboxAgents(t, e.ns, e.key, e.port)
	env.StartKubox(t, e.ns, configure)
	return e
}

// sandbox returns a Sandbox running kubox-agent with the idle policy suspendAfter and processes.
func (e *idleEnv) sandbox(name string, processes sandboxv1beta1.IdleProcessPolicy) *testutil.SandboxWrapper {
	w := testutil.MakeSandbox(name, e.ns)
	w.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(e.port)), CompatibilityPort: ptr.To[int32](0)}
	w.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: suspendAfter}, RunningProcesses: processes}
	return w
}

// waitReady waits until the Sandbox is Ready and returns it.
func waitReady(t *testing.T, ns, name string) *sandboxv1beta1.Sandbox {
	t.Helper()
	return waitForSandbox(t, ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		return meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) && len(sb.Status.PodIPs) > 0, describe(sb)
	})
}

// waitIdle waits, longer than waitForSandbox, until ok accepts the Sandbox, and returns it.
func waitIdle(t *testing.T, ns, name string, ok func(*sandboxv1beta1.Sandbox) (bool, string)) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{}
	framework.WaitFor(t, idleWait, func() (bool, string) {
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
			return false, err.Error()
		}
		return ok(sb)
	})
	return sb
}

// idleSuspended accepts a Sandbox the idle policy suspended and whose Pod is gone.
func idleSuspended(sb *sandboxv1beta1.Sandbox) (bool, string) {
	done := sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended &&
		meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended) &&
		sb.Status.Idle != nil && sb.Status.Idle.Reason == sandboxv1beta1.IdleReasonSuspended
	return done, "operatingMode " + string(sb.Spec.OperatingMode) + ", idle " + describeIdle(sb) + ", " + describe(sb)
}

func describeIdle(sb *sandboxv1beta1.Sandbox) string {
	if sb.Status.Idle == nil {
		return "none"
	}
	return sb.Status.Idle.Reason + " (" + sb.Status.Idle.Message + ")"
}

// readyTime is when the Ready condition last changed.
func readyTime(t *testing.T, sb *sandboxv1beta1.Sandbox) time.Time {
	t.Helper()
	c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
	if c == nil {
		t.Fatalf("Sandbox %s has no Ready condition: %s", sb.Name, describe(sb))
	}
	return c.LastTransitionTime.Time
}

// TestIdleSandboxIsSuspended: a sandbox nobody uses is suspended, not before suspendAfter has
// passed since it became Ready: its Pod goes, its PVC stays, and the status says why.
func TestIdleSandboxIsSuspended(t *testing.T) {
	t.Parallel()
	e := startIdleEnv(t)
	const name = "idle"
	env.Create(t, e.sandbox(name, hostProcesses).VolumeClaimTemplate("work", "1Gi").Obj())
	pvcName := sandboxv1beta1.PVCName("work", name)
	ready := waitReady(t, e.ns, name)
	readyAt := readyTime(t, ready)
	writes := countWritesUntilSuspended(t, ready)
	pvc := framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: pvcName}}, nil)

	sb := waitIdle(t, e.ns, name, idleSuspended)
	// The idle window costs one write, the status that starts the clock; a controller that
	// polled or wrote per check would write every few seconds.
	select {
	case n := <-writes:
		if n < 0 || n > 2 {
			t.Errorf("the Sandbox was written %d times between Ready and the suspend (-1: the watch ended); want the clock's start at most", n)
		}
		t.Logf("Writes to the Sandbox between Ready and the suspend: %d", n)
	case <-time.After(framework.DefaultTimeout):
		t.Error("the watch did not see the suspend")
	}
	if got := sb.Annotations[sandboxv1beta1.SuspendedByAnnotation]; got != sandboxv1beta1.SuspendedByIdle {
		t.Errorf("annotation %s = %q, want %q", sandboxv1beta1.SuspendedByAnnotation, got, sandboxv1beta1.SuspendedByIdle)
	}
	// Ready turned False in the pass that suspended it, and keeps that time while it stays False.
	if suspendedAt := readyTime(t, sb); suspendedAt.Sub(readyAt) < suspendAfter {
		t.Errorf("suspended at %s, %s after it became Ready at %s; want at least %s",
			suspendedAt, suspendedAt.Sub(readyAt), readyAt, suspendAfter)
	}
	if last := sb.Status.Idle.LastActiveTime; last == nil || last.Before(&metav1.Time{Time: readyAt}) {
		t.Errorf("status.idle.lastActiveTime = %v, want the check's start, at or after Ready at %s", last, readyAt)
	}
	env.WaitForEvent(t, e.ns, "Sandbox", name, corev1.EventTypeNormal, sandbox.EventIdleSuspended, "without activity")
	framework.Consistently(t, quiet, func() (bool, string) {
		found, err := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}})
		return !found && err == nil, "a Pod exists while the Sandbox is suspended"
	})
	kept := framework.WaitForObject(t, env, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: pvcName}}, nil)
	if kept.UID != pvc.UID || kept.DeletionTimestamp != nil {
		t.Errorf("PersistentVolumeClaim %s was replaced or is being deleted; want it kept", pvcName)
	}

	t.Log("A request wakes it, as kubox-router does: Running, suspended-by removed, last-activity now")
	saved := idleSuspendedSeconds(t)
	updateSandbox(t, e.ns, name, func(sb *sandboxv1beta1.Sandbox) {
		sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeRunning
		delete(sb.Annotations, sandboxv1beta1.SuspendedByAnnotation)
		sb.Annotations[sandboxv1beta1.LastActivityAnnotation] = time.Now().UTC().Format(time.RFC3339)
	})
	woken := waitReady(t, e.ns, name)
	if woken.Status.Idle == nil || woken.Status.Idle.Reason != sandboxv1beta1.IdleReasonRequests ||
		woken.Status.Idle.LastActiveTime == nil || woken.Status.Idle.LastActiveTime.Before(&metav1.Time{Time: readyTime(t, sb)}) {
		t.Errorf("status.idle after the wake = %s at %v; want Requests, after the suspend", describeIdle(woken), woken.Status.Idle)
	}
	if woken.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeRunning {
		t.Errorf("operatingMode %q right after the wake; want Running", woken.Spec.OperatingMode)
	}
	if got := idleSuspendedSeconds(t) - saved; got <= 0 {
		t.Errorf("kubox_sandbox_idle_suspended_seconds_total += %v at the resume; want the time it was suspended", got)
	}
}

// countWritesUntilSuspended counts the changes to sb after the version given until one sets
// operatingMode Suspended, and sends the count (without that change) once it has come.
func countWritesUntilSuspended(t *testing.T, sb *sandboxv1beta1.Sandbox) <-chan int {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(t.Context(), &sandboxv1beta1.SandboxList{}, client.InNamespace(sb.Namespace),
		client.MatchingFields{"metadata.name": sb.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: sb.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan int, 1)
	go func() {
		defer w.Stop()
		n := 0
		for ev := range w.ResultChan() {
			if got, ok := ev.Object.(*sandboxv1beta1.Sandbox); ok {
				if got.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
					out <- n
					return
				}
				n++
			}
		}
		out <- -1
	}()
	return out
}

// TestLastActivityPostponesTheSuspend: a last-activity annotation written during the window, as
// kubox-router writes it, moves the deadline to that time + suspendAfter.
func TestLastActivityPostponesTheSuspend(t *testing.T) {
	t.Parallel()
	e := startIdleEnv(t)
	const name = "busy"
	env.Create(t, e.sandbox(name, hostProcesses).Obj())
	watched := waitForSandbox(t, e.ns, name, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		return sb.Status.Idle != nil && sb.Status.Idle.LastActiveTime != nil, "idle " + describeIdle(sb)
	})
	start := watched.Status.Idle.LastActiveTime.Time

	// Half way through the window, a request.
	time.Sleep(time.Until(start.Add(suspendAfter / 2)))
	activity := time.Now().UTC().Truncate(time.Second)
	if !activity.After(start) {
		t.Fatalf("the request's time %s is not after the window's start %s", activity, start)
	}
	updateSandbox(t, e.ns, name, func(sb *sandboxv1beta1.Sandbox) {
		if sb.Annotations == nil {
			sb.Annotations = map[string]string{}
		}
		sb.Annotations[sandboxv1beta1.LastActivityAnnotation] = activity.Format(time.RFC3339)
	})

	sb := waitIdle(t, e.ns, name, idleSuspended)
	if suspendedAt := readyTime(t, sb); suspendedAt.Sub(activity) < suspendAfter {
		t.Errorf("suspended at %s, %s after the last activity at %s; want at least %s",
			suspendedAt, suspendedAt.Sub(activity), activity, suspendAfter)
	}
}

// TestRunningProcessesKeepASandboxAwake: a process started through the agent keeps the sandbox
// Running past its deadline, named in status.idle; with runningProcesses Ignore it does not.
func TestRunningProcessesKeepASandboxAwake(t *testing.T) {
	t.Parallel()
	e := startIdleEnv(t)
	env.Create(t, e.sandbox("worker", sandboxv1beta1.IdleProcessPolicyKeepAwake).Obj())
	env.Create(t, e.sandbox("ignored", sandboxv1beta1.IdleProcessPolicyIgnore).Obj())
	// Others: processes the agents see that the test did not start. Each agent of this test runs
	// in the test's process, so it sees the test host's processes, not a container's.
	others := int32(0)
	for _, name := range []string{"worker", "ignored"} {
		sb := waitReady(t, e.ns, name)
		token := contract.DeriveAgentToken(e.key, sb.UID)
		url := "http://" + net.JoinHostPort(sb.Status.PodIPs[0], strconv.Itoa(e.port))
		// The framework starts a Pod's agent from a watch: it may listen a moment after Ready.
		var act *connect.Response[agentv1.GetActivityResponse]
		framework.Eventually(t, func() (bool, string) {
			var err error
			act, err = agentv1connect.NewActivityServiceClient(contract.BearerClient(token), url).
				GetActivity(t.Context(), connect.NewRequest(&agentv1.GetActivityRequest{}))
			return err == nil, fmt.Sprintf("GetActivity from the agent of %s: %v", name, err)
		})
		others = max(others, act.Msg.GetRunningProcessCount())
		startSleep(t, agentv1connect.NewProcessServiceClient(contract.BearerClient(token), url))
	}

	worker := waitIdle(t, e.ns, "worker", func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		return sb.Status.Idle != nil && sb.Status.Idle.Reason == sandboxv1beta1.IdleReasonRunningProcesses,
			"operatingMode " + string(sb.Spec.OperatingMode) + ", idle " + describeIdle(sb)
	})
	if worker.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		t.Errorf("Sandbox worker was suspended while running a process: %s", describeIdle(worker))
	}
	switch {
	case others == 0 && !strings.Contains(worker.Status.Idle.Message, "sleep 600"):
		t.Errorf("status.idle.message = %q, want it to name sleep 600", worker.Status.Idle.Message)
	case others > 0:
		// The list is cut at 16, by pid: the host's older processes come before sleep 600, and
		// they would keep the sandbox awake without it.
		t.Logf("The agents see %d processes of the test host besides sleep 600; the message names them: %.200s",
			others, worker.Status.Idle.Message)
	}
	if ready := readyTime(t, worker); worker.Status.Idle.LastActiveTime.Sub(ready) < suspendAfter {
		t.Errorf("RunningProcesses seen at %s, before the deadline (Ready at %s + %s)", worker.Status.Idle.LastActiveTime, ready, suspendAfter)
	}
	waitIdle(t, e.ns, "ignored", idleSuspended)
}

// startSleep starts `sleep 600` through the agent and leaves it running.
func startSleep(t *testing.T, c agentv1connect.ProcessServiceClient) {
	t.Helper()
	stream, err := c.StartProcess(t.Context(), connect.NewRequest(&agentv1.StartProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"sleep", "600"}}}))
	if err != nil {
		t.Fatalf("StartProcess: %v", err)
	}
	defer func() { _ = stream.Close() }()
	for stream.Receive() {
		if started := stream.Msg().GetEvent().GetStarted(); started != nil {
			// Closing the stream leaves the process running; stop it when the test ends.
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, _ = c.SendSignal(ctx, connect.NewRequest(&agentv1.SendSignalRequest{ProcessId: started.GetProcessId(), Signal: "SIGKILL"}))
			})
			return
		}
	}
	t.Fatalf("StartProcess ended without a Started event: %v", stream.Err())
}

// TestUserSuspendIsCountedAsUser: a suspend someone else makes counts reason=user, not idle. Not
// parallel: the counters are the process's, and parallel tests would add to them.
func TestUserSuspendIsCountedAsUser(t *testing.T) {
	e := startIdleEnv(t)
	const name = "napping"
	env.Create(t, e.sandbox(name, sandboxv1beta1.IdleProcessPolicyKeepAwake).Obj())
	waitReady(t, e.ns, name)
	user, idle := suspends(t, metrics.SuspendReasonUser), suspends(t, metrics.SuspendReasonIdle)

	updateSandbox(t, e.ns, name, func(sb *sandboxv1beta1.Sandbox) { sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended })
	sb := waitForConditions(t, e.ns, name,
		suspendedCond(metav1.ConditionTrue, sandboxv1beta1.SandboxReasonPodTerminated, "Pod has been terminated. Sandbox is suspended"))
	if _, set := sb.Annotations[sandboxv1beta1.SuspendedByAnnotation]; set {
		t.Errorf("a user suspend carries %s", sandboxv1beta1.SuspendedByAnnotation)
	}
	if sb.Status.Idle != nil && sb.Status.Idle.Reason == sandboxv1beta1.IdleReasonSuspended {
		t.Errorf("status.idle says the idle policy suspended it: %s", describeIdle(sb))
	}
	if got := suspends(t, metrics.SuspendReasonUser) - user; got != 1 {
		t.Errorf("kubox_sandbox_suspends_total{reason=user} += %v, want 1", got)
	}
	if got := suspends(t, metrics.SuspendReasonIdle) - idle; got != 0 {
		t.Errorf("kubox_sandbox_suspends_total{reason=idle} += %v, want 0", got)
	}
}

// idleSuspendedSeconds reads kubox_sandbox_idle_suspended_seconds_total.
func idleSuspendedSeconds(t *testing.T) float64 {
	t.Helper()
	return counter(t, "kubox_sandbox_idle_suspended_seconds_total", func(*dto.Metric) bool { return true })
}

// suspends reads kubox_sandbox_suspends_total{reason} from controller-runtime's registry, where
// the controller registers it.
func suspends(t *testing.T, reason string) float64 {
	t.Helper()
	return counter(t, "kubox_sandbox_suspends_total", func(m *dto.Metric) bool {
		return slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "reason" && l.GetValue() == reason })
	})
}

// counter reads the series of the counter called name that match accepts from controller-runtime's
// registry, where the controller registers its metrics; 0 when there is none.
func counter(t *testing.T, name string, match func(*dto.Metric) bool) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if match(m) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
