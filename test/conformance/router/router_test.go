// Package router runs the sandboxd conformance suite through kubox-router: a real router and a
// real kube-apiserver (the integration framework), a real kubox-agent on 127.0.0.1 as the
// sandbox's Pod, and agent-sandbox's header routing (X-Sandbox-ID, X-Sandbox-Namespace,
// X-Sandbox-Port) to the agent's sandboxd ports, gRPC proxied natively over HTTP/2 without TLS.
//
// The agent runs with compatibilityAuth Disabled: the router authenticates the client, and
// injects the sandbox's agent token only for the ports status.agent records (the agent port and
// the compatibility port), which do not include sandboxd's.
package router

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/conformance"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { framework.Main(m, &env, framework.WithAgents()) }

// key is the token key the router shares with the (absent) controller.
var key = []byte(strings.Repeat("conformance-key!", 3))

// sharedToken is the router's shared token: the client's credential.
const sharedToken = "conformance-shared-token-0123456789abcdef"

func TestSandboxdThroughKuboxRouter(t *testing.T) {
	ns := env.NewNamespace(t)
	_, routerURL := env.StartRouter(t, ns, key, func(c *router.Config) { c.SharedToken = []byte(sharedToken) })
	apiPort, compatPort := framework.FreePort(t), framework.FreePort(t)
	grpcPort, restPort := framework.FreePort(t), framework.FreePort(t)

	sb := testutil.MakeSandbox("sbx", ns).Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(apiPort)), CompatibilityPort: ptr.To(int32(compatPort))}
	env.Create(t, sb)
	root := t.TempDir()
	framework.StartAgent(t, agent.Config{Port: apiPort, CompatPort: compatPort, Token: framework.AgentToken(key, sb.UID),
		CompatBaseDir: root, SandboxdRoot: root, SandboxdGRPCPort: grpcPort, SandboxdRESTPort: restPort})
	markReady(t, sb)

	route := func(port int) map[string]string {
		return map[string]string{"authorization": "Bearer " + sharedToken, "x-sandbox-id": sb.Name,
			"x-sandbox-namespace": ns, "x-sandbox-port": strconv.Itoa(port)}
	}
	header := func(port int) http.Header {
		h := http.Header{}
		for k, v := range route(port) {
			h.Set(k, v)
		}
		return h
	}
	tg := &conformance.Target{
		Conn:       conformance.Dial(t, strings.TrimPrefix(routerURL, "http://"), route(grpcPort)),
		GRPCURL:    routerURL,
		GRPCHeader: header(grpcPort),
		REST:       routerURL,
		Header:     header(restPort),
		Root:       root,
	}
	waitRouted(t, routerURL, header(restPort))
	conformance.Run(t, tg)
}

// markReady writes the status kubox-controller would (pod IP 127.0.0.1, Ready, the agent ports)
// after making the Sandbox's Pod hold that IP, as the router checks.
func markReady(t *testing.T, sb *sandboxv1beta1.Sandbox) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: sb.Namespace, Name: sb.Name,
			Labels: map[string]string{sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(sb.Name)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: sandboxv1beta1.GroupVersion.String(), Kind: "Sandbox",
				Name: sb.Name, UID: sb.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	env.Create(t, pod)
	env.UpdatePodStatus(t, sb.Namespace, pod.Name, framework.RunningAndReady(framework.LoopbackIP))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(sb), sb); err != nil {
			return err
		}
		sb.Status.Agent = &sandboxv1beta1.AgentStatus{Port: *sb.Spec.Agent.Port, CompatibilityPort: *sb.Spec.Agent.CompatibilityPort}
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

// waitRouted waits until the router's cache has the sandbox: /v1/health through it answers 200.
func waitRouted(t *testing.T, routerURL string, header http.Header) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, routerURL+"/v1/health", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header.Clone()
		res, err := http.DefaultClient.Do(req)
		code := 0
		if err == nil {
			code = res.StatusCode
			_ = res.Body.Close()
		}
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router does not route to the sandbox: last answer %d, %v", code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
