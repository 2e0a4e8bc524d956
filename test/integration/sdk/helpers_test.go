package sdk

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/token"
	"github.com/kubox-dev/kubox/internal/testutil"
	kubox "github.com/kubox-dev/kubox/sdk/go"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const (
	agentImage = "kubox.local/kubox-agent:dev"
	// pendingImage marks Pods the loopback kubelet leaves Pending.
	pendingImage = "kubox.local/never-starts:dev"
	// readyTimeout bounds the SDK's waits in these tests.
	readyTimeout = time.Minute
)

// fixture is one test's namespace, with kubox running in it, a template "python" whose
// sandboxes run kubox-agent on agentPort, and an SDK client in direct mode.
type fixture struct {
	ns        string
	key       []byte
	agentPort int
	sdk       *kubox.Client
}

// setup creates a namespace for t, starts the loopback kubelet and every kubox controller in it
// (with an agent image and token key), creates the template "python", and returns an SDK
// client for the namespace.
func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ns: env.NewNamespace(t), key: []byte(strings.Repeat("0123456789abcdef", 3)), agentPort: freePort(t)}
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, append(f.key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	startLoopbackKubelet(t, f.ns)
	env.StartKubox(t, f.ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = keyFile
	})
	env.Create(t, f.template("python").Obj())
	c, err := kubox.New(env.Config, kubox.Options{Namespace: f.ns, Connection: kubox.ConnectDirect, ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	f.sdk = c
	return f
}

// template starts a SandboxTemplate whose sandboxes run kubox-agent on the fixture's port.
func (f *fixture) template(name string) *testutil.TemplateWrapper {
	w := testutil.MakeTemplate(name, f.ns).Unmanaged()
	w.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(f.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	return w
}

// startAgent serves sb's agent port on 127.0.0.1 with a real kubox-agent that requires the token
// the controller derived for sb's UID. Its files live in a temporary root. It stops when the
// test ends.
func (f *fixture) startAgent(t *testing.T, sb *kubox.Sandbox) {
	t.Helper()
	f.startAgentWithToken(t, token.Derive(f.key, sb.Object().UID))
}

// startAgentWithToken is startAgent with the token tok; it returns a function that stops the
// agent before the test ends.
func (f *fixture) startAgentWithToken(t *testing.T, tok string) (stop func()) {
	t.Helper()
	a, err := agent.New(agent.Config{Host: "127.0.0.1", Port: f.agentPort, Token: []byte(tok), Root: t.TempDir(),
		WorkDir: t.TempDir(), ShutdownGrace: time.Second})
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	if err := a.Listen(); err != nil {
		t.Fatalf("agent.Listen: %v", err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := a.Shutdown(ctx); err != nil {
				t.Errorf("agent.Shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func freePort(t *testing.T) int { return framework.FreePort(t) }

// startLoopbackKubelet plays the scheduler and kubelet for ns: every Pod that has not started,
// except those running pendingImage, becomes scheduled, Running and Ready with the IP 127.0.0.1
// (where the tests' agents listen). The framework's Kubelet gives each Pod an IP of its own in
// 10.0.0.0/8, which nothing here can reach. It stops when the test ends.
func startLoopbackKubelet(t *testing.T, ns string) {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) { loopbackPass(ctx, t, c, ns) }, framework.PollInterval)
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// loopbackPass lists ns's Pods, starts those waiting, and then follows a watch until it ends.
func loopbackPass(ctx context.Context, t *testing.T, c client.WithWatch, ns string) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range pods.Items {
		startPod(ctx, t, c, &pods.Items[i])
	}
	w, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pods.ResourceVersion}})
	if err != nil {
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if pod, ok := ev.Object.(*corev1.Pod); ok {
			startPod(ctx, t, c, pod)
		}
	}
}

func startPod(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil || (pod.Status.Phase != "" && pod.Status.Phase != corev1.PodPending) ||
		pod.Spec.Containers[0].Image == pendingImage {
		return
	}
	framework.SetPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	framework.RunningAndReady("127.0.0.1")(&pod.Status)
	err := c.Status().Update(ctx, pod)
	if err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		t.Errorf("Loopback kubelet: updating Pod %s: %v", pod.Name, err)
	}
}
