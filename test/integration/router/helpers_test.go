package router

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// key is the token key the router shares with the (absent) controller.
var key = []byte(strings.Repeat("router-test-key!", 3))

// sharedToken is the router's shared token in tests that configure one.
const sharedToken = "shared-token-0123456789abcdef0123456789"

// testRouter is a router serving on 127.0.0.1.
type testRouter struct {
	*router.Router
	url string
	ns  string
}

// startRouter runs a router for namespace ns until the test ends; mutate changes its
// configuration first.
func startRouter(t *testing.T, ns string, mutate func(*router.Config)) *testRouter {
	t.Helper()
	rt, url := env.StartRouter(t, ns, key, mutate)
	return &testRouter{Router: rt, url: url, ns: ns}
}

func freePort(t *testing.T) int { return framework.FreePort(t) }

// agentSandbox is a Sandbox served by a real kubox-agent on 127.0.0.1.
type agentSandbox struct {
	sb                  *sandboxv1beta1.Sandbox
	apiPort, compatPort int
	// dir is the agent's working directory.
	dir string
}

// startAgentSandbox creates Sandbox name in ns with spec.agent ports of a kubox-agent it starts
// with the token derived from the Sandbox's UID, and marks the Sandbox Ready at 127.0.0.1.
func startAgentSandbox(t *testing.T, ns, name string) *agentSandbox {
	t.Helper()
	a := &agentSandbox{apiPort: freePort(t), compatPort: freePort(t)}
	a.sb = createSandbox(t, ns, name, &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(a.apiPort)), CompatibilityPort: ptr.To(int32(a.compatPort))})
	a.dir = t.TempDir()
	framework.StartAgent(t, agent.Config{Port: a.apiPort, CompatPort: a.compatPort, CompatAuth: true,
		Token: framework.AgentAuth(key, a.sb.UID), WorkDir: a.dir, CompatBaseDir: a.dir, SandboxdRoot: a.dir})
	markReady(t, a.sb, framework.LoopbackIP)
	return a
}

// createSandbox creates a Sandbox with spec.agent set to agentSpec (nil: none).
func createSandbox(t *testing.T, ns, name string, agentSpec *sandboxv1beta1.AgentSpec) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := testutil.MakeSandbox(name, ns).Obj()
	sb.Spec.Agent = agentSpec
	env.Create(t, sb)
	return sb
}

// markReady writes the status a controller would: pod IP ip and Ready=True.
func markReady(t *testing.T, sb *sandboxv1beta1.Sandbox, ip string) {
	t.Helper()
	setStatus(t, sb, []string{ip}, metav1.ConditionTrue)
}

// setStatus writes the Sandbox's pod IPs and Ready condition, and the agent ports its spec.agent
// asks for, as kubox-controller records them (status.agent); with IPs, it first makes the Pod
// the Sandbox controls hold them (the router dials a pod IP only while the sandbox's Pod has it).
func setStatus(t *testing.T, sb *sandboxv1beta1.Sandbox, ips []string, ready metav1.ConditionStatus) {
	t.Helper()
	reason := sandboxv1beta1.SandboxReasonDependenciesReady
	if ready != metav1.ConditionTrue {
		reason = sandboxv1beta1.SandboxReasonDependenciesNotReady
	}
	if len(ips) > 0 {
		ensurePod(t, sb, ips)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// A fresh copy: createClaim binds the Sandbox to its claim after the test read it.
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(sb), sb); err != nil {
			return err
		}
		sb.Status.Agent = recordedAgentPorts(sb.Spec.Agent)
		sb.Status.PodIPs = ips
		sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1beta1.SandboxConditionReady, Status: ready, Reason: reason,
			Message: "set by the test", LastTransitionTime: metav1.Now(), ObservedGeneration: sb.Generation}}
		return env.Client.Status().Update(t.Context(), sb)
	})
	if err != nil {
		t.Fatalf("Writing the status of Sandbox %s: %v", sb.Name, err)
	}
}

// recordedAgentPorts is the status.agent kubox-controller's default configuration records for a
// sandbox with spec.agent a (nil: none).
func recordedAgentPorts(a *sandboxv1beta1.AgentSpec) *sandboxv1beta1.AgentStatus {
	if a == nil {
		return nil
	}
	return &sandboxv1beta1.AgentStatus{Port: ptr.Deref(a.Port, configv1alpha1.DefaultAgentPort),
		CompatibilityPort: ptr.Deref(a.CompatibilityPort, configv1alpha1.DefaultAgentCompatibilityPort)}
}

// ensurePod makes the Pod of sb (named like it, controlled by it, labelled as kubox-controller
// labels it) Running and Ready with ips, replacing a Pod of that name that another Sandbox (an
// earlier one of the same name) controls.
func ensurePod(t *testing.T, sb *sandboxv1beta1.Sandbox, ips []string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sb.Namespace, Name: sb.Name}}
	found, err := env.Get(t, pod)
	if err != nil {
		t.Fatal(err)
	}
	if found && !metav1.IsControlledBy(pod, sb) {
		env.ForceDelete(t, pod)
		env.WaitGone(t, pod)
		found = false
	}
	if !found {
		pod = sandboxPod(sb.Namespace, sb.Name, sb.Name, sb)
		env.Create(t, pod)
	}
	env.UpdatePodStatus(t, sb.Namespace, pod.Name, framework.RunningAndReady(ips...))
}

// sandboxPod is a Pod called name labelled as the Pod of sandbox sandboxName, controlled by
// owner (nil: by nothing).
func sandboxPod(ns, name, sandboxName string, owner *sandboxv1beta1.Sandbox) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{sandboxv1beta1.SandboxNameHashLabel: sandboxv1beta1.NameHash(sandboxName)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: sandboxv1beta1.GroupVersion.String(), Kind: "Sandbox",
			Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	}
	return pod
}

// createClaim creates a SandboxClaim bound to sandbox (its status.sandbox.name) as the claim
// controller binds one: the Sandbox, when it exists, gets the claim as its controller owner and
// the claim-uid label.
func createClaim(t *testing.T, ns, name, sandbox string) *extv1beta1.SandboxClaim {
	t.Helper()
	c := testutil.MakeClaim(name, ns).Template("tpl").Obj()
	env.Create(t, c)
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sandbox}}
	if found, err := env.Get(t, sb); err != nil {
		t.Fatal(err)
	} else if found {
		framework.Update(t, env, sb, func(sb *sandboxv1beta1.Sandbox) {
			sb.OwnerReferences = []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim",
				Name: c.Name, UID: c.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
			if sb.Labels == nil {
				sb.Labels = map[string]string{}
			}
			sb.Labels[sandboxv1beta1.ClaimUIDLabel] = string(c.UID)
		})
	}
	c.Status.Sandbox.Name = sandbox
	if err := env.Client.Status().Update(t.Context(), c); err != nil {
		t.Fatalf("Writing the status of SandboxClaim %s: %v", name, err)
	}
	return c
}

// serviceAccountToken creates ServiceAccount name in ns and returns a token for it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	return env.ServiceAccountToken(t, ns, name)
}

// grantConnect lets ServiceAccount sa create group/resource/connect on the named objects.
func grantConnect(t *testing.T, ns, sa, group, resource string, names ...string) {
	t.Helper()
	env.Grant(t, ns, sa, sa+"-"+resource, framework.ConnectRule(group, resource, names...))
}

const (
	sandboxesGroup = "agents.x-k8s.io"
	claimsGroup    = "extensions.agents.x-k8s.io"
)

// response is what a test reads of an answer.
type response struct {
	code int
	body string
	hdr  http.Header
}

// errorMessage is the "error" of the router's JSON error body, or "".
func (r response) errorMessage() string {
	var b struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if json.Unmarshal([]byte(r.body), &b) != nil || b.Code != r.code {
		return ""
	}
	return b.Error
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.code, strings.TrimSpace(r.body)) }

// do sends method url with body and headers ("Name: value") and reads the answer.
func do(t *testing.T, method, url, body string, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(k, "Host") {
			req.Host = strings.TrimSpace(v)
			continue
		}
		req.Header.Add(k, strings.TrimSpace(v))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer of %s %s: %v", method, url, err)
	}
	return response{code: res.StatusCode, body: string(b), hdr: res.Header}
}

// eventuallyStatus repeats the request until it gets code: the router's cache follows the API
// server a moment behind.
func eventuallyStatus(t *testing.T, code int, method, url, body string, headers ...string) response {
	t.Helper()
	var last response
	framework.Eventually(t, func() (bool, string) {
		last = do(t, method, url, body, headers...)
		return last.code == code, fmt.Sprintf("%s %s: %s; want %d", method, url, last, code)
	})
	return last
}

func bearer(tok string) string { return "Authorization: Bearer " + tok }

// recordingServer is a plain HTTP server on 127.0.0.1 standing for a sandbox's app (or its
// agent): it answers "app" and keeps the last request's headers and Host.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	last *http.Request
}

func startRecordingServer(t *testing.T) *recordingServer { return startRecordingServerH2C(t, false) }

// startRecordingServerH2C is startRecordingServer that also speaks HTTP/2 without TLS when h2c.
func startRecordingServerH2C(t *testing.T, h2c bool) *recordingServer {
	t.Helper()
	s := &recordingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.last = r.Clone(context.Background())
		s.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-App", "yes")
		_, _ = fmt.Fprintf(w, "app %s %s", r.Method, r.URL.RequestURI())
	}))
	if h2c {
		s.Config.Protocols = new(http.Protocols)
		s.Config.Protocols.SetHTTP1(true)
		s.Config.Protocols.SetUnencryptedHTTP2(true)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// serverPort is the port of a test server.
func serverPort(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }

func (s *recordingServer) port() int { return serverPort(s.Server) }

func (s *recordingServer) lastRequest(t *testing.T) *http.Request {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		t.Fatal("the app received no request")
	}
	return s.last
}

func eventually(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	framework.Eventually(t, cond)
}

// counter sums the samples of metric name whose labels contain every one of labels
// (`key="value"`), as the router's metrics handler serves them.
// waitNothingInFlight waits until the router has finished every request: a client reads the
// last byte of a response before the handler returns, records its metrics and gives back its
// slots, so a test that counts or fills slots right after a response waits for this first.
func waitNothingInFlight(t *testing.T, rt *testRouter) {
	t.Helper()
	eventually(t, func() (bool, string) {
		got := counter(t, rt, "sandbox_router_inflight_requests")
		return got == 0, fmt.Sprintf("sandbox_router_inflight_requests = %v with nothing in flight", got)
	})
}

func counter(t *testing.T, rt *testRouter, name string, labels ...string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	rt.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var sum float64
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(series, l)
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func ptrInt32(i int) *int32 { v := int32(i); return &v }
