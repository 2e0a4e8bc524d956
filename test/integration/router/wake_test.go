package router

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// pendingImage marks the Pods the Kubelet of the wake tests leaves Pending.
const pendingImage = "kubox.test/pending:never"

// idleSuspendAfter is long enough that no idle check can happen during a test.
const idleSuspendAfter = time.Hour

// wakeEnv is a namespace with the real controller, the Kubelet, the sandboxes' agents and a
// router whose writes to the API server are counted.
type wakeEnv struct {
	ns        string
	url       string
	rt        *testRouter
	agentPort int
	patches   *patchCounter
	// waker may connect to and patch every Sandbox; viewer may only connect.
	waker, viewer string
}

// startWakeEnv starts it; mutate (may be nil) changes the router's configuration.
func startWakeEnv(t *testing.T, mutate func(*router.Config)) *wakeEnv {
	t.Helper()
	return startWakeEnvAs(t, false, mutate)
}

// startWakeEnvAs is startWakeEnv with the router reaching the API server as the ServiceAccount
// kubox-router of the test's namespace bound to nothing but the ClusterRole `make manifests`
// generates, when leastPrivileged.
func startWakeEnvAs(t *testing.T, leastPrivileged bool, mutate func(*router.Config)) *wakeEnv {
	t.Helper()
	e := &wakeEnv{ns: env.NewNamespace(t), agentPort: freePort(t), patches: &patchCounter{}}
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, append(key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	env.StartKubelet(t, e.ns, framework.WithLoopbackPodIPs()).SetFate(framework.ImageFate(pendingImage, framework.LeavePending))
	env.ServeSandboxAgents(t, e.ns, key, e.agentPort)
	env.StartKubox(t, e.ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = "kubox.local/kubox-agent:dev"
		c.Agent.TokenKeyFile = keyFile
	})
	cfg := rest.CopyConfig(env.Config)
	if leastPrivileged {
		cfg = env.ConfigFor(bindGeneratedRouterRole(t, e.ns))
	}
	cfg.Wrap(e.patches.wrap)
	rt, url := env.StartRouterAs(t, cfg, e.ns, key, func(c *router.Config) {
		// A Pod is Ready a moment before its agent (started from a watch here) listens; a real
		// Pod's readiness probe waits for the agent.
		c.UpstreamMaxRetries = 8
		if mutate != nil {
			mutate(c)
		}
	})
	e.rt, e.url = &testRouter{Router: rt, url: url, ns: e.ns}, url
	e.waker = serviceAccountToken(t, e.ns, "waker")
	env.Grant(t, e.ns, "waker", "waker", framework.ConnectRule(sandboxesGroup, "sandboxes"),
		framework.ConnectRule(claimsGroup, "sandboxclaims"),
		rbacv1.PolicyRule{APIGroups: []string{sandboxesGroup}, Resources: []string{"sandboxes"}, Verbs: []string{"patch"}})
	e.viewer = serviceAccountToken(t, e.ns, "viewer")
	env.Grant(t, e.ns, "viewer", "viewer", framework.ConnectRule(sandboxesGroup, "sandboxes"),
		framework.ConnectRule(claimsGroup, "sandboxclaims"))
	return e
}

// sandbox creates Sandbox name running the agent with the idle policy p (nil: none), suspended
// when suspended, its Pods left Pending when pending, and waits until the controller has
// reported it (suspended, or Ready).
func (e *wakeEnv) sandbox(t *testing.T, name string, p *sandboxv1beta1.IdlePolicy, suspended, pending bool) *sandboxv1beta1.Sandbox {
	t.Helper()
	w := testutil.MakeSandbox(name, e.ns)
	if suspended {
		w.Suspended()
	}
	if pending {
		w.Image(pendingImage)
	}
	sb := w.Obj()
	sb.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(e.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	sb.Spec.IdlePolicy = p
	env.Create(t, sb)
	want := sandboxv1beta1.SandboxReasonDependenciesReady
	if suspended {
		want = sandboxv1beta1.SandboxReasonSuspended
	}
	return waitReadyReason(t, sb, want)
}

// waitReadyReason waits until sb's Ready condition has reason for its current generation.
func waitReadyReason(t *testing.T, sb *sandboxv1beta1.Sandbox, reason string) *sandboxv1beta1.Sandbox {
	t.Helper()
	return framework.WaitForObject(t, env, sb, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady)
		return c != nil && c.Reason == reason && c.ObservedGeneration == sb.Generation,
			fmt.Sprintf("Sandbox %s: Ready %+v at generation %d; want reason %s", sb.Name, c, sb.Generation, reason)
	})
}

// onRequest is an idle policy that wakes on request.
func onRequest() *sandboxv1beta1.IdlePolicy {
	return &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: idleSuspendAfter}, Wake: sandboxv1beta1.WakePolicyOnRequest}
}

// sandboxURL is the URL of path on the agent of Sandbox name, through the router.
func (e *wakeEnv) sandboxURL(name, p string) string {
	return e.url + "/sandboxes/" + e.ns + "/" + name + p
}

// waitSeenSuspended waits until the router's cache has Sandbox name suspended: the viewer, who
// may not wake it, is then refused (before, the sandbox is unknown or not ready).
func (e *wakeEnv) waitSeenSuspended(t *testing.T, name string) response {
	t.Helper()
	return eventuallyStatus(t, http.StatusForbidden, http.MethodGet, e.sandboxURL(name, "/healthz"), "", bearer(e.viewer))
}

// get reads Sandbox name from the API server.
func (e *wakeEnv) get(t *testing.T, name string) *sandboxv1beta1.Sandbox {
	t.Helper()
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	if found, err := env.Get(t, sb); err != nil || !found {
		t.Fatalf("reading Sandbox %s: found %v, %v", name, found, err)
	}
	return sb
}

// patchCounter counts the router's PATCH requests to Sandboxes, by name; resumes are those
// that set operatingMode.
type patchCounter struct {
	mu      sync.Mutex
	patches map[string]int
	resumes map[string]int
}

func (c *patchCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/sandboxes/") && r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			_ = r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(b))
			c.count(path.Base(r.URL.Path), bytes.Contains(b, []byte("operatingMode")))
		}
		return next.RoundTrip(r)
	})
}

func (c *patchCounter) count(name string, resume bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.patches == nil {
		c.patches, c.resumes = map[string]int{}, map[string]int{}
	}
	c.patches[name]++
	if resume {
		c.resumes[name]++
	}
}

// of returns the patches and resumes of Sandbox name so far.
func (c *patchCounter) of(name string) (patches, resumes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.patches[name], c.resumes[name]
}

// checkWoken checks that Sandbox name is Running again, as the router's one patch leaves it.
func (e *wakeEnv) checkWoken(t *testing.T, name string) {
	t.Helper()
	sb := e.get(t, name)
	if sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeRunning {
		t.Errorf("Sandbox %s: operatingMode %s after the wake, want Running", name, sb.Spec.OperatingMode)
	}
	if v, ok := sb.Annotations[sandboxv1beta1.SuspendedByAnnotation]; ok {
		t.Errorf("Sandbox %s still has %s=%q after the wake", name, sandboxv1beta1.SuspendedByAnnotation, v)
	}
	if _, err := time.Parse(time.RFC3339, sb.Annotations[sandboxv1beta1.LastActivityAnnotation]); err != nil {
		t.Errorf("Sandbox %s: %s is %q after the wake, want an RFC 3339 time", name, sandboxv1beta1.LastActivityAnnotation,
			sb.Annotations[sandboxv1beta1.LastActivityAnnotation])
	}
}

// markSuspendedByIdle sets the annotation the controller's idle check sets when it suspends.
func markSuspendedByIdle(sb *sandboxv1beta1.Sandbox) {
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	sb.Annotations[sandboxv1beta1.SuspendedByAnnotation] = sandboxv1beta1.SuspendedByIdle
}

func TestWakeOnRequest(t *testing.T) {
	e := startWakeEnv(t, nil)
	e.sandbox(t, "box", onRequest(), true, false)
	framework.Update(t, env, e.get(t, "box"), markSuspendedByIdle)
	e.waitSeenSuspended(t, "box")

	res := do(t, http.MethodGet, e.sandboxURL("box", "/healthz"), "", bearer(e.waker))
	if res.code != http.StatusOK || !strings.Contains(res.body, `"ok"`) {
		t.Fatalf("GET through the router of a suspended sandbox: %s; want 200 from its agent", res)
	}
	e.checkWoken(t, "box")
	if patches, resumes := e.patches.of("box"); patches != 1 || resumes != 1 {
		t.Errorf("the router patched the Sandbox %d times (%d resumes), want once", patches, resumes)
	}
	if got := counter(t, e.rt, "kubox_router_wakes_total", `result="woken"`); got != 1 {
		t.Errorf("kubox_router_wakes_total{result=woken} is %v, want 1", got)
	}
	if got := counter(t, e.rt, "kubox_router_wake_duration_seconds_count"); got != 1 {
		t.Errorf("kubox_router_wake_duration_seconds has %v samples, want 1", got)
	}
	t.Logf("Woken in %.3fs (request arrival to Ready)", counter(t, e.rt, "kubox_router_wake_duration_seconds_sum"))
}

// TestWakeWithGeneratedClusterRole wakes a sandbox, and writes its last activity, with a
// router that has nothing but its generated ClusterRole: the patch verb is there.
func TestWakeWithGeneratedClusterRole(t *testing.T) {
	e := startWakeEnvAs(t, true, nil)
	e.sandbox(t, "box", onRequest(), true, false)
	e.sandbox(t, "busy", onRequest(), false, false)
	e.waitSeenSuspended(t, "box")
	if res := do(t, http.MethodGet, e.sandboxURL("box", "/healthz"), "", bearer(e.waker)); res.code != http.StatusOK {
		t.Fatalf("GET of a suspended sandbox through a least-privileged router: %s; want 200", res)
	}
	e.checkWoken(t, "box")
	eventuallyStatus(t, http.StatusOK, http.MethodGet, e.sandboxURL("busy", "/healthz"), "", bearer(e.waker))
	framework.WaitForObject(t, env, e.get(t, "busy"), func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		v := sb.Annotations[sandboxv1beta1.LastActivityAnnotation]
		return v != "", fmt.Sprintf("%s is %q", sandboxv1beta1.LastActivityAnnotation, v)
	})
	if got := counter(t, e.rt, "kubox_router_activity_writes_total", `result="error"`); got != 0 {
		t.Errorf("kubox_router_activity_writes_total{result=error} is %v, want 0", got)
	}
}

func TestWakeConcurrentRequestsPatchOnce(t *testing.T) {
	e := startWakeEnv(t, nil)
	e.sandbox(t, "box", onRequest(), true, false)
	e.waitSeenSuspended(t, "box")
	// The router reviews an unknown token a few at a time per client (429 beyond): make the
	// waker's known first, with a request for a sandbox that does not exist.
	eventuallyStatus(t, http.StatusNotFound, http.MethodGet, e.sandboxURL("missing", "/healthz"), "", bearer(e.waker))

	const n = 20
	results := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = do(t, http.MethodGet, e.sandboxURL("box", "/healthz"), "", bearer(e.waker)) })
	}
	wg.Wait()
	for i, res := range results {
		if res.code != http.StatusOK {
			t.Errorf("request %d: %s; want 200", i, res)
		}
	}
	e.checkWoken(t, "box")
	if patches, resumes := e.patches.of("box"); patches != 1 || resumes != 1 {
		t.Errorf("%d concurrent requests made the router patch the Sandbox %d times (%d resumes), want once", n, patches, resumes)
	}
}

func TestWakeNeedsPatchPermissionOrClaimToken(t *testing.T) {
	e := startWakeEnv(t, nil)
	tpl := testutil.MakeTemplate("idle", e.ns).Unmanaged().Obj()
	tpl.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(e.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	tpl.Spec.IdlePolicy = onRequest()
	env.Create(t, tpl)
	claim := testutil.MakeClaim("claim", e.ns).Template("idle").Obj()
	env.Create(t, claim)
	claim = framework.WaitForObject(t, env, claim, func(c *extv1beta1.SandboxClaim) (bool, string) {
		return meta.IsStatusConditionTrue(c.Status.Conditions, "Ready"), fmt.Sprintf("claim: %+v", c.Status)
	})
	name := claim.Status.Sandbox.Name
	// Suspend it as the controller's idle check would.
	framework.Update(t, env, e.get(t, name), func(sb *sandboxv1beta1.Sandbox) {
		sb.Spec.IdlePolicy = onRequest()
		sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
		markSuspendedByIdle(sb)
	})
	waitReadyReason(t, e.get(t, name), sandboxv1beta1.SandboxReasonSuspended)

	res := e.waitSeenSuspended(t, name)
	if msg := res.errorMessage(); !strings.Contains(msg, "patch") || !strings.Contains(msg, name) {
		t.Errorf("the viewer's answer %q does not name the sandbox and the permission it lacks", msg)
	}
	if sb := e.get(t, name); sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended {
		t.Errorf("a refused caller left the sandbox %s, want Suspended", sb.Spec.OperatingMode)
	}
	if patches, _ := e.patches.of(name); patches != 0 {
		t.Errorf("the router patched the Sandbox %d times for a refused caller, want 0", patches)
	}
	if got := counter(t, e.rt, "kubox_router_wakes_total", `result="forbidden"`); got < 1 {
		t.Errorf("kubox_router_wakes_total{result=forbidden} is %v, want at least 1", got)
	}

	tok, err := claimtoken.Mint(key, claimtoken.Claims{Namespace: e.ns, Claim: claim.Name, UID: claim.UID, Expiry: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	res = do(t, http.MethodGet, e.url+"/claims/"+e.ns+"/claim/healthz", "", bearer(tok))
	if res.code != http.StatusOK {
		t.Fatalf("GET with the claim token of the sandbox's claim: %s; want 200", res)
	}
	e.checkWoken(t, name)
	if patches, resumes := e.patches.of(name); patches != 1 || resumes != 1 {
		t.Errorf("the router patched the Sandbox %d times (%d resumes), want once", patches, resumes)
	}
}

func TestWakeManualIsRefused(t *testing.T) {
	e := startWakeEnv(t, nil)
	p := onRequest()
	p.Wake = sandboxv1beta1.WakePolicyManual
	e.sandbox(t, "manual", p, true, false)
	e.sandbox(t, "nopolicy", nil, true, false)
	for _, name := range []string{"manual", "nopolicy"} {
		res := eventuallyStatus(t, http.StatusServiceUnavailable, http.MethodGet, e.sandboxURL(name, "/healthz"), "", bearer(e.waker))
		if msg := res.errorMessage(); !strings.Contains(msg, "kubox resume -n "+e.ns+" "+name) || res.hdr.Get("Retry-After") == "" {
			t.Errorf("%s: %q (Retry-After %q); want the way to resume it and a Retry-After", name, msg, res.hdr.Get("Retry-After"))
		}
		if sb := e.get(t, name); sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended {
			t.Errorf("%s: operatingMode %s, want Suspended", name, sb.Spec.OperatingMode)
		}
		if patches, _ := e.patches.of(name); patches != 0 {
			t.Errorf("%s: the router patched it %d times, want 0", name, patches)
		}
	}
}

func TestWakeTimeout(t *testing.T) {
	e := startWakeEnv(t, func(c *router.Config) { c.WakeTimeout = 2 * time.Second })
	e.sandbox(t, "slow", onRequest(), true, true)
	e.waitSeenSuspended(t, "slow")

	res := do(t, http.MethodGet, e.sandboxURL("slow", "/healthz"), "", bearer(e.waker))
	if res.code != http.StatusGatewayTimeout || res.hdr.Get("Retry-After") == "" || !strings.Contains(res.errorMessage(), "--wake-timeout") {
		t.Fatalf("a sandbox that does not get Ready: %s (Retry-After %q); want 504 with Retry-After naming --wake-timeout",
			res, res.hdr.Get("Retry-After"))
	}
	// The resume stands: the sandbox goes on starting.
	if sb := e.get(t, "slow"); sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeRunning {
		t.Errorf("operatingMode %s after the timeout, want Running", sb.Spec.OperatingMode)
	}
	if got := counter(t, e.rt, "kubox_router_wakes_total", `result="timeout"`); got != 1 {
		t.Errorf("kubox_router_wakes_total{result=timeout} is %v, want 1", got)
	}
}

func TestActivityIsWrittenOncePerWindow(t *testing.T) {
	e := startWakeEnv(t, nil)
	e.sandbox(t, "busy", onRequest(), false, false)
	e.sandbox(t, "plain", nil, false, false)
	eventuallyStatus(t, http.StatusOK, http.MethodGet, e.sandboxURL("busy", "/healthz"), "", bearer(e.waker))
	eventuallyStatus(t, http.StatusOK, http.MethodGet, e.sandboxURL("plain", "/healthz"), "", bearer(e.waker))
	for i := range 50 {
		if res := do(t, http.MethodGet, e.sandboxURL("busy", "/healthz"), "", bearer(e.waker)); res.code != http.StatusOK {
			t.Fatalf("request %d: %s", i, res)
		}
		if res := do(t, http.MethodGet, e.sandboxURL("plain", "/healthz"), "", bearer(e.waker)); res.code != http.StatusOK {
			t.Fatalf("request %d to the sandbox without idle policy: %s", i, res)
		}
	}
	framework.WaitForObject(t, env, e.get(t, "busy"), func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		v := sb.Annotations[sandboxv1beta1.LastActivityAnnotation]
		_, err := time.Parse(time.RFC3339, v)
		return err == nil, fmt.Sprintf("%s is %q", sandboxv1beta1.LastActivityAnnotation, v)
	})
	if patches, _ := e.patches.of("busy"); patches != 1 {
		t.Errorf("51 requests within the window made %d writes of the last activity, want 1", patches)
	}
	if patches, _ := e.patches.of("plain"); patches != 0 {
		t.Errorf("requests to a sandbox without idle policy made %d writes, want 0", patches)
	}
	if _, ok := e.get(t, "plain").Annotations[sandboxv1beta1.LastActivityAnnotation]; ok {
		t.Errorf("a sandbox without idle policy got %s", sandboxv1beta1.LastActivityAnnotation)
	}
	if got := counter(t, e.rt, "kubox_router_activity_writes_total", `result="success"`); got != 1 {
		t.Errorf("kubox_router_activity_writes_total{result=success} is %v, want 1", got)
	}
}

func TestActivityOfHeaderRoutedRequests(t *testing.T) {
	e := startWakeEnv(t, nil)
	e.sandbox(t, "busy", onRequest(), false, false)
	headers := []string{bearer(e.waker), "X-Sandbox-ID: busy", "X-Sandbox-Namespace: " + e.ns, "X-Sandbox-Port: " + strconv.Itoa(e.agentPort)}
	eventuallyStatus(t, http.StatusOK, http.MethodGet, e.url+"/healthz", "", headers...)
	for i := range 10 {
		if res := do(t, http.MethodGet, e.url+"/healthz", "", headers...); res.code != http.StatusOK {
			t.Fatalf("header-routed request %d: %s", i, res)
		}
	}
	framework.WaitForObject(t, env, e.get(t, "busy"), func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		v := sb.Annotations[sandboxv1beta1.LastActivityAnnotation]
		return v != "", fmt.Sprintf("%s is %q", sandboxv1beta1.LastActivityAnnotation, v)
	})
	if patches, _ := e.patches.of("busy"); patches != 1 {
		t.Errorf("11 header-routed requests made %d writes of the last activity, want 1", patches)
	}
}

// TestWakeKeepsTheAgentPortFromPreviewHosts: a suspended sandbox records no agent ports, so the
// preview host's refusal of them finds nothing to refuse before the wake; after it, the woken
// sandbox records them again, and the request must still be refused rather than reach the
// agent with the token the router adds.
func TestWakeKeepsTheAgentPortFromPreviewHosts(t *testing.T) {
	e := startWakeEnv(t, func(c *router.Config) { c.PreviewDomain = previewDomain })
	sb := e.sandbox(t, "box", onRequest(), true, false)
	framework.Update(t, env, e.get(t, "box"), markSuspendedByIdle)
	e.waitSeenSuspended(t, "box")

	host := contract.PreviewHost(e.agentPort, contract.PreviewID(sb.UID), previewDomain) + ":8080"
	res := do(t, http.MethodGet, e.url+"/healthz", "", "Host: "+host, bearer(e.waker))
	if res.code != http.StatusForbidden || !strings.Contains(res.body, "preview hosts never serve") {
		t.Fatalf("GET of the agent's port on the preview host of a suspended sandbox: %s; want 403 once it is woken, "+
			"the agent's ports being refused there", res)
	}
}
