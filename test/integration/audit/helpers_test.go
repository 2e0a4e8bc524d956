package audit

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	auditrec "github.com/kubox-dev/kubox/internal/audit"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// key is the token key the router shares with the (absent) controller.
var key = []byte(strings.Repeat("audit-test-key!!", 3))

// memorySink keeps the records the router's queue writes.
type memorySink struct {
	mu      sync.Mutex
	records []auditrec.Record
}

func (*memorySink) Name() string { return "memory" }

func (s *memorySink) Write(_ context.Context, records []auditrec.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, records...)
	return nil
}

func (*memorySink) Close(context.Context) error { return nil }

// waitFor returns the sink's records once one matches, failing the test when none does in time.
func (s *memorySink) waitFor(t *testing.T, what string, match func(auditrec.Record) bool) auditrec.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), framework.DefaultTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		i := slices.IndexFunc(s.records, match)
		var got auditrec.Record
		if i >= 0 {
			got = s.records[i]
		}
		all := slices.Clone(s.records)
		s.mu.Unlock()
		if i >= 0 {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no audit record of %s; the router wrote %d: %+v", what, len(all), all)
		case <-time.After(10 * time.Millisecond): // the queue's flush interval is 20 ms
		}
	}
}

// startAuditRouter runs a router for ns that writes its audit records to sinks, flushing every
// 20 ms; it returns the router's URL.
func startAuditRouter(t *testing.T, ns string, sinks ...auditrec.Sink) string {
	t.Helper()
	_, url := env.StartRouter(t, ns, key, func(c *router.Config) {
		c.AuditSinks = sinks
		c.AuditQueue = auditrec.QueueConfig{FlushInterval: 20 * time.Millisecond}
	})
	return url
}

// startAgentSandbox creates Sandbox name in ns served by a real kubox-agent on 127.0.0.1 and
// marks it Ready; it returns the agent's working directory.
func startAgentSandbox(t *testing.T, ns, name string) string {
	t.Helper()
	port := framework.FreePort(t)
	sb := createSandbox(t, ns, name, port)
	dir := t.TempDir()
	framework.StartAgent(t, agent.Config{Port: port, Token: framework.AgentAuth(key, sb.UID), WorkDir: dir})
	markReady(t, sb)
	return dir
}

// createSandbox creates Sandbox name whose agent listens on port.
func createSandbox(t *testing.T, ns, name string, port int) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := testutil.MakeSandbox(name, ns).Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(port))}
	env.Create(t, sb)
	return sb
}

// markReady writes the status a controller would: the Pod holds 127.0.0.1, the agent's port is
// recorded, Ready=True.
func markReady(t *testing.T, sb *sandboxv1beta1.Sandbox) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sb.Namespace, Name: sb.Name,
		Labels:          map[string]string{sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(sb.Name)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: sandboxv1beta1.GroupVersion.String(), Kind: "Sandbox", Name: sb.Name, UID: sb.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	env.Create(t, pod)
	env.UpdatePodStatus(t, sb.Namespace, pod.Name, framework.RunningAndReady(framework.LoopbackIP))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(sb), sb); err != nil {
			return err
		}
		sb.Status.Agent = &sandboxv1beta1.AgentStatus{Port: *sb.Spec.Agent.Port}
		sb.Status.PodIPs = []string{framework.LoopbackIP}
		sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionReady, Status: metav1.ConditionTrue,
			Reason: sandboxv1beta1.SandboxReasonDependenciesReady, Message: "set by the test", LastTransitionTime: metav1.Now(),
			ObservedGeneration: sb.Generation}}
		return env.Client.Status().Update(t.Context(), sb)
	})
	if err != nil {
		t.Fatalf("Writing the status of Sandbox %s: %v", sb.Name, err)
	}
}

// serviceAccount creates ServiceAccount sa in ns allowed to connect to sandbox, and returns its
// token and the principal the router names it by.
func serviceAccount(t *testing.T, ns, sa, sandbox string) (token, principal string) {
	t.Helper()
	token = env.ServiceAccountToken(t, ns, sa)
	env.Grant(t, ns, sa, sa+"-connect", framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes", sandbox))
	return token, "system:serviceaccount:" + ns + ":" + sa
}
