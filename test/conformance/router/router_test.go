// Package router runs the sandboxd conformance suite through kubox-router: a real router and a
// real kube-apiserver (the integration framework), a real kubox-agent on 127.0.0.1 as the
// sandbox's Pod, and agent-sandbox's header routing (X-Sandbox-ID, X-Sandbox-Namespace,
// X-Sandbox-Port) to the agent's sandboxd ports, gRPC proxied natively over HTTP/2 without TLS.
//
// The agent requires its token on sandboxd's ports (compatibilityAuth Required, the default): the
// router authenticates the client and adds the sandbox's agent token for the ports status.agent
// records, sandboxd's included, and for no other.
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
	sb, grpcPort, restPort, root := sandboxdSandbox(t, ns, "sbx", true)

	route := func(port int) map[string]string {
		return map[string]string{"authorization": "Bearer " + sharedToken, "x-sandbox-id": sb.Name,
			"x-sandbox-namespace": ns, "x-sandbox-port": strconv.Itoa(port)}
	}
	tg := &conformance.Target{
		Conn:       conformance.Dial(t, strings.TrimPrefix(routerURL, "http://"), route(grpcPort)),
		GRPCURL:    routerURL,
		GRPCHeader: header(route(grpcPort)),
		REST:       routerURL,
		Header:     header(route(restPort)),
		Root:       root,
	}
	waitRouted(t, routerURL, header(route(restPort)))
	conformance.Run(t, tg)

	// A sandbox whose status does not record its sandboxd ports gets no agent token on them: the
	// agent, which requires it there, refuses the call the router passes on.
	bare, _, bareREST, _ := sandboxdSandbox(t, ns, "bare", false)
	h := header(map[string]string{"authorization": "Bearer " + sharedToken, "x-sandbox-id": bare.Name,
		"x-sandbox-namespace": ns, "x-sandbox-port": strconv.Itoa(bareREST)})
	waitRouted(t, routerURL, h) // /v1/health needs no token
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, routerURL+"/v1/files/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/files/ through the router to a sandboxd port status.agent does not record: %d; want 401 from the agent "+
			"(the router must add the agent token only for recorded ports)", res.StatusCode)
	}
}

// sandboxdSandbox creates Sandbox name with a kubox-agent on 127.0.0.1 that serves sandboxd's
// ports and requires the agent token on them (compatibilityAuth Required), and marks it Ready;
// recordSandboxd says whether its status.agent records the sandboxd ports, as kubox-controller
// does when the container's environment names them.
func sandboxdSandbox(t *testing.T, ns, name string, recordSandboxd bool) (*sandboxv1beta1.Sandbox, int, int, string) {
	t.Helper()
	apiPort, compatPort := framework.FreePort(t), framework.FreePort(t)
	grpcPort, restPort := framework.FreePort(t), framework.FreePort(t)
	sb := testutil.MakeSandbox(name, ns).Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(apiPort)), CompatibilityPort: ptr.To(int32(compatPort))}
	env.Create(t, sb)
	root := t.TempDir()
	framework.StartAgent(t, agent.Config{Port: apiPort, CompatPort: compatPort, Token: framework.AgentAuth(key, sb.UID), CompatAuth: true,
		CompatBaseDir: root, SandboxdRoot: root, SandboxdGRPCPort: grpcPort, SandboxdRESTPort: restPort})
	st := &sandboxv1beta1.AgentStatus{Port: int32(apiPort), CompatibilityPort: int32(compatPort)}
	if recordSandboxd {
		st.SandboxdGRPCPort, st.SandboxdRESTPort = int32(grpcPort), int32(restPort)
	}
	markReady(t, sb, st)
	return sb, grpcPort, restPort, root
}

func header(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// markReady writes the status kubox-controller would (pod IP 127.0.0.1, Ready, the agent ports)
// after making the Sandbox's Pod hold that IP, as the router checks.
func markReady(t *testing.T, sb *sandboxv1beta1.Sandbox, agentStatus *sandboxv1beta1.AgentStatus) {
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
		sb.Status.Agent = agentStatus
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
