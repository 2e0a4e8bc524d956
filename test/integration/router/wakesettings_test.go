package router

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// secretDir is where the template lets claims put secret files.
const secretDir = "/run/secrets/kubox"

// claimWithSettings creates a template whose sandboxes run the agent and take settings, a pool
// of one, and claim name of it with TOKEN=name and, with secretFiles, the Secret api as files,
// waking on request; it returns the claim once Ready with its sandbox.
func (e *wakeEnv) claimWithSettings(t *testing.T, name string, secretFiles bool) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox) {
	t.Helper()
	env.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: e.ns}, Data: map[string][]byte{"token": []byte("s3cr3t")}})
	tpl := testutil.MakeTemplate("python", e.ns).Unmanaged().EnvVarsInjectionPolicy(extv1beta1.EnvVarsInjectionPolicyAllowed).
		ClaimPolicy(extv1beta1.ClaimPolicy{AllowedSecretFilePaths: []string{secretDir}}).Obj()
	tpl.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(e.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	env.Create(t, tpl)
	pool := testutil.MakePool("pool", e.ns, "python").Replicas(1).Obj()
	env.Create(t, pool)
	framework.WaitForObject(t, env, pool, func(p *extv1beta1.SandboxWarmPool) (bool, string) {
		return p.Status.ReadyReplicas == 1, "SandboxWarmPool pool has no Ready member yet"
	})
	claim := testutil.MakeClaim(name, e.ns).WarmPool("pool").Env("TOKEN", name, "").Obj()
	if secretFiles {
		claim.Spec.SecretFiles = []extv1beta1.SecretFile{{SecretName: "api", MountPath: secretDir}}
	}
	claim.Spec.IdlePolicy = onRequest()
	env.Create(t, claim)
	claim = e.waitClaimReady(t, claim, metav1.ConditionTrue)
	sb := e.get(t, claim.Status.Sandbox.Name)
	if !extv1beta1.LaunchedWarm(sb.Labels) {
		t.Fatalf("claim %s started Sandbox %s cold; the test needs a warm one", name, sb.Name)
	}
	return claim, sb
}

// waitClaimReady waits until claim's Ready has status.
func (e *wakeEnv) waitClaimReady(t *testing.T, claim *extv1beta1.SandboxClaim, status metav1.ConditionStatus) *extv1beta1.SandboxClaim {
	t.Helper()
	return framework.WaitForObject(t, env, claim, func(c *extv1beta1.SandboxClaim) (bool, string) {
		ready := meta.FindStatusCondition(c.Status.Conditions, extv1beta1.ClaimConditionReady)
		return ready != nil && ready.Status == status, "SandboxClaim " + c.Name + ": Ready " + condString(ready) + ", want " + string(status)
	})
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return "unset"
	}
	return string(c.Status) + " (" + c.Reason + ": " + c.Message + ")"
}

// suspendIdle suspends Sandbox name as the idle check does and waits until the claim and the
// router's cache show it so.
func (e *wakeEnv) suspendIdle(t *testing.T, claim *extv1beta1.SandboxClaim, name string) {
	t.Helper()
	framework.Update(t, env, e.get(t, name), func(sb *sandboxv1beta1.Sandbox) {
		sb.Spec.OperatingMode = sandboxv1beta1.SandboxOperatingModeSuspended
		markSuspendedByIdle(sb)
	})
	e.waitClaimReady(t, claim, metav1.ConditionFalse)
	e.waitSeenSuspended(t, name)
}

// runThroughRouter runs argv in Sandbox name through the router (the agent's RunProcess, in
// the Connect protocol's JSON) as the waker, which may wake it.
func (e *wakeEnv) runThroughRouter(t *testing.T, name string, argv ...string) (response, string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"argv": argv}})
	if err != nil {
		t.Fatal(err)
	}
	res := do(t, http.MethodPost, e.sandboxURL(name, "/kubox.agent.v1.ProcessService/RunProcess"), string(body),
		bearer(e.waker), "Content-Type: application/json")
	var out struct {
		Stdout string `json:"stdout"`
	}
	if res.code != http.StatusOK {
		return res, ""
	}
	if err := json.Unmarshal([]byte(res.body), &out); err != nil {
		t.Fatalf("RunProcess through the router: %v in %s", err, res.body)
	}
	stdout, err := base64.StdEncoding.DecodeString(out.Stdout)
	if err != nil {
		t.Fatalf("RunProcess stdout %q: %v", out.Stdout, err)
	}
	return res, string(stdout)
}

// TestWakeWaitsForTheClaimsSettings: a request that wakes a warm claim's sandbox is proxied only
// once the claim's settings are in the new Pod, so the first process it starts sees them; and a
// claim whose Secret is gone gets a 503 naming the claim instead of a sandbox without its files.
func TestWakeWaitsForTheClaimsSettings(t *testing.T) {
	e := startWakeEnv(t, nil)
	claim, sb := e.claimWithSettings(t, "c", true)

	for i := range 3 {
		e.suspendIdle(t, claim, sb.Name)
		res, out := e.runThroughRouter(t, sb.Name, "printenv", "TOKEN")
		if res.code != http.StatusOK || out != "c\n" {
			t.Fatalf("wake %d: the first process in the woken sandbox: %s, output %q; want the claim's TOKEN", i+1, res, out)
		}
		if file := do(t, http.MethodGet, e.sandboxURL(sb.Name, "/files"+secretDir+"/token"), "", bearer(e.waker)); file.code != http.StatusOK || file.body != "s3cr3t" {
			t.Fatalf("wake %d: the claim's secret file in the woken sandbox: %s; want its content", i+1, file)
		}
	}

	e.suspendIdle(t, claim, sb.Name)
	if err := env.Client.Delete(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: e.ns}}); err != nil {
		t.Fatal(err)
	}
	res, _ := e.runThroughRouter(t, sb.Name, "true")
	if res.code != http.StatusServiceUnavailable || !strings.Contains(res.body, "SandboxClaim c cannot take its settings") ||
		!strings.Contains(res.body, extv1beta1.ClaimReasonSecretFilesRejected) {
		t.Errorf("waking a sandbox whose claim's Secret is gone: %s; want 503 naming the claim and %s", res, extv1beta1.ClaimReasonSecretFilesRejected)
	}
}

// TestWakeWaitsForTheClaimsEnv: a warm claim that sets env and no secret files takes its
// settings through the agent too, so a request that wakes its sandbox is held until they are in
// the new Pod: the router's cache keeps what api/'s rule reads (the sandbox's launch-type label),
// and its first process sees TOKEN every time.
func TestWakeWaitsForTheClaimsEnv(t *testing.T) {
	e := startWakeEnv(t, nil)
	claim, sb := e.claimWithSettings(t, "c", false)
	for i := range 3 {
		e.suspendIdle(t, claim, sb.Name)
		res, out := e.runThroughRouter(t, sb.Name, "printenv", "TOKEN")
		if res.code != http.StatusOK || out != "c\n" {
			t.Fatalf("wake %d: the first process in the woken sandbox: %s, output %q; want the claim's TOKEN", i+1, res, out)
		}
	}
}
