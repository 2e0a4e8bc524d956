package router

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestClaimDoesNotReachALaterSandboxOfItsName is the attack on a claim whose sandbox is gone:
// another user creates a Sandbox with the old name while the claim's status still names it
// (the router's cache, or a controller that does not clear it, lags). Neither the claim route
// nor a claim token minted for the claim reaches that Sandbox: it is not the claim's (its
// controller owner reference is not the claim).
func TestClaimDoesNotReachALaterSandboxOfItsName(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, nil)
	startAgentSandbox(t, ns, "bound")
	createClaim(t, ns, "mine", "bound")
	owner := serviceAccountToken(t, ns, "owner")
	grantConnect(t, ns, "owner", claimsGroup, "sandboxclaims", "mine")
	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/claims/"+ns+"/mine/healthz", "", bearer(owner))
	claimToken, res := mintToken(t, rt, ns, "mine", owner, "")
	if res.code != http.StatusOK {
		t.Fatalf("minting a claim token: %s", res)
	}
	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/sandboxes/"+ns+"/bound/healthz", "", bearer(claimToken))

	// The claim's sandbox goes; the attacker creates a Sandbox of that name, serving an app that
	// records what it is sent.
	old := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bound"}}
	if err := env.Client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, old)
	trap := startRecordingServer(t)
	fake := createSandbox(t, ns, "bound", &sandboxv1beta1.AgentSpec{Port: ptrInt32(trap.port())})
	markReady(t, fake, "127.0.0.1")
	attacker := serviceAccountToken(t, ns, "attacker")
	grantConnect(t, ns, "attacker", sandboxesGroup, "sandboxes", "bound")
	// Once the attacker reaches their own Sandbox, the router's cache holds it.
	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/sandboxes/"+ns+"/bound/x", "", bearer(attacker))
	trap.mu.Lock()
	trap.last = nil
	trap.mu.Unlock()

	for name, tc := range map[string]struct {
		path, credential string
		code             int
	}{
		"claim route, Kubernetes identity": {"/claims/" + ns + "/mine/x", owner, http.StatusNotFound},
		"claim route, claim token":         {"/claims/" + ns + "/mine/x", claimToken, http.StatusNotFound},
		"sandbox route, claim token":       {"/sandboxes/" + ns + "/bound/x", claimToken, http.StatusForbidden},
	} {
		t.Run(name, func(t *testing.T) {
			res := do(t, http.MethodGet, rt.url+tc.path, "", bearer(tc.credential))
			if res.code != tc.code || !strings.Contains(res.errorMessage(), "not") {
				t.Errorf("%s: %s; want %d saying the Sandbox is not the claim's", tc.path, res, tc.code)
			}
		})
	}
	trap.mu.Lock()
	defer trap.mu.Unlock()
	if trap.last != nil {
		t.Errorf("the attacker's Sandbox received %s %s through the claim", trap.last.Method, trap.last.URL)
	}
}

// TestStalePodIPIsNotDialed is the attack on pod IP reuse: a sandbox's Pod is deleted and a Pod
// of someone else gets the same IP before the Sandbox's status changes. The router does not
// dial the IP (nor send the sandbox's agent token there) while no live Pod of the sandbox holds
// it: 503 with Retry-After.
func TestStalePodIPIsNotDialed(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	own := startRecordingServer(t)
	port := own.port()
	sb := createSandbox(t, ns, "victim", &sandboxv1beta1.AgentSpec{Port: ptrInt32(port)})
	markReady(t, sb, "127.0.0.1")
	url := rt.url + "/sandboxes/" + ns + "/victim/x"
	eventuallyStatus(t, http.StatusOK, http.MethodGet, url, "", bearer(sharedToken))

	// The sandbox's Pod goes; its IP and port now belong to another tenant's Pod. The Sandbox's
	// status still reports the IP (the controller has not caught up).
	env.ForceDelete(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "victim"}})
	own.Close()
	intruder := listenRecordingServerAt(t, "127.0.0.1:"+strconv.Itoa(port))
	other := createSandbox(t, ns, "other", nil)
	env.Create(t, sandboxPod(ns, "other", "other", other))
	env.UpdatePodStatus(t, ns, "other", framework.RunningAndReady("127.0.0.1"))

	res := eventuallyStatus(t, http.StatusServiceUnavailable, http.MethodGet, url, "", bearer(sharedToken))
	if !strings.Contains(res.errorMessage(), "no running Pod of the sandbox has that IP") || res.hdr.Get("Retry-After") == "" {
		t.Errorf("stale pod IP: %s (Retry-After %q); want a 503 naming the stale IP, with Retry-After", res, res.hdr.Get("Retry-After"))
	}
	intruder.mu.Lock()
	intruder.last = nil
	intruder.mu.Unlock()
	for range 3 {
		if res := do(t, http.MethodGet, url, "", bearer(sharedToken)); res.code != http.StatusServiceUnavailable {
			t.Errorf("stale pod IP: %s; want 503", res)
		}
	}
	intruder.mu.Lock()
	defer intruder.mu.Unlock()
	if intruder.last != nil {
		t.Errorf("the Pod that took the IP received %s %s (Authorization %q)", intruder.last.Method, intruder.last.URL,
			intruder.last.Header.Get("Authorization"))
	}
}

// listenRecordingServerAt is startRecordingServer listening on addr.
func listenRecordingServerAt(t *testing.T, addr string) *recordingServer {
	t.Helper()
	s := startRecordingServer(t)
	s.Close()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	handler := s.Config.Handler
	s.Server = httptest.NewUnstartedServer(handler)
	_ = s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// TestAgentTokenGoesOnlyToTheRecordedAgentPort is the attack on port guessing: kubox-controller
// runs the agent on a port of its configuration (not 7070), while the router would guess 7070
// for a sandbox whose spec.agent sets no port, and something else of the sandbox listens there.
// The router dials the port the Sandbox records (status.agent), and the agent token goes to no
// other port.
func TestAgentTokenGoesOnlyToTheRecordedAgentPort(t *testing.T) {
	ns := env.NewNamespace(t)
	agentPort := freePort(t)
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	env.StartKubelet(t, ns, framework.WithLoopbackPodIPs())
	env.StartKubox(t, ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = "kubox.local/kubox-agent:dev"
		c.Agent.TokenKeyFile = keyFile
		c.Agent.Port = ptr.To(int32(agentPort))
		c.Agent.CompatibilityPort = ptr.To[int32](0)
	})
	rt := startRouter(t, ns, withSharedToken)
	sb := testutil.MakeSandbox("box", ns).Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{}
	env.Create(t, sb)
	sb = framework.WaitForObject(t, env, sb, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		return len(sb.Status.PodIPs) > 0, fmt.Sprintf("status %+v", sb.Status)
	})
	ip := sb.Status.PodIPs[0]
	framework.StartAgentAt(t, ip, agent.Config{Port: agentPort, Token: framework.AgentAuth(key, sb.UID), Root: t.TempDir()})
	// What listens on the port a router would guess: not the agent.
	guessed := listenRecordingServerAt(t, net.JoinHostPort(ip, "7070"))

	eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/healthz", "", bearer(sharedToken))
	out := ""
	eventually(t, func() (bool, string) {
		var err error
		out, err = runEcho(t, rt.url+"/sandboxes/"+ns+"/box", sharedToken, "agent")
		return err == nil, fmt.Sprintf("running echo through the router: %v", err)
	})
	if out != "agent\n" {
		t.Errorf("stdout %q; want the agent's", out)
	}
	if got := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, "box").Status.Agent; got == nil || got.Port != int32(agentPort) {
		t.Errorf("status.agent = %+v; want port %d, the controller's", got, agentPort)
	}
	// The app on 7070 is reachable by naming its port, and gets no agent token.
	res := do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/x", "", bearer(sharedToken), "X-Sandbox-Port: 7070")
	if res.code != http.StatusOK {
		t.Fatalf("the app on 7070: %s", res)
	}
	if a := guessed.lastRequest(t).Header.Get("Authorization"); a != "" {
		t.Errorf("the app on port 7070 received Authorization %q; the agent token goes only to the recorded agent port", a)
	}
}
