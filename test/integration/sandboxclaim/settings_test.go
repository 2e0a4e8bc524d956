package sandboxclaim

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/sandboxclaim"
	"github.com/kubox-dev/kubox/internal/testutil"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// agentImage is the agent image the controller is configured with; the test's Kubelet never
// pulls it, and ServeSandboxAgents plays the agent.
const agentImage = "kubox.local/kubox-agent:dev"

// settingsDir is where the tests' templates allow claims' secret files.
const settingsDir = "/etc/claim"

// agentEnv is a namespace whose sandboxes run real kubox-agents (framework.ServeSandboxAgents)
// on loopback Pod IPs, with every kubox reconciler configured for the agent.
type agentEnv struct {
	ns   string
	key  []byte
	port int
}

func startWithAgents(t *testing.T, opts ...framework.ManagerOption) *agentEnv {
	t.Helper()
	e := &agentEnv{ns: env.NewNamespace(t), key: []byte(strings.Repeat("0123456789abcdef", 3)), port: framework.FreePort(t)}
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, append(e.key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	env.StartKubelet(t, e.ns, framework.WithLoopbackPodIPs())
	env.ServeSandboxAgents(t, e.ns, e.key, e.port)
	env.StartKubox(t, e.ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = keyFile
	}, opts...)
	return e
}

// settingsTemplate is a template whose sandboxes run the agent on port (0: none), allowing claims
// to add env and secret files under settingsDir.
func settingsTemplate(name, ns string, port int) *extv1beta1.SandboxTemplate {
	tpl := testutil.MakeTemplate(name, ns).Unmanaged().EnvVarsInjectionPolicy(extv1beta1.EnvVarsInjectionPolicyAllowed).
		ClaimPolicy(extv1beta1.ClaimPolicy{AllowedSecretFilePaths: []string{settingsDir}}).Obj()
	if port != 0 {
		tpl.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(port)), CompatibilityPort: ptr.To[int32](0)}
	}
	return tpl
}

// baseURL is the agent of sb and a client with its token.
func (e *agentEnv) agent(t *testing.T, sb *sandboxv1beta1.Sandbox) (string, *http.Client) {
	t.Helper()
	if len(sb.Status.PodIPs) == 0 {
		t.Fatalf("Sandbox %s has no Pod IP", sb.Name)
	}
	return "http://" + sb.Status.PodIPs[0] + ":" + strconv.Itoa(e.port), contract.BearerClient(string(framework.AgentToken(e.key, sb.UID)))
}

// printenv runs printenv name through sb's agent, as a user's process, and returns its output.
func (e *agentEnv) printenv(t *testing.T, sb *sandboxv1beta1.Sandbox, name string) string {
	t.Helper()
	base, hc := e.agent(t, sb)
	res, err := agentv1connect.NewProcessServiceClient(hc, base).RunProcess(t.Context(),
		connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"printenv", name}}}))
	if err != nil {
		t.Fatalf("RunProcess on Sandbox %s: %v", sb.Name, err)
	}
	return string(res.Msg.GetStdout())
}

// readFile reads p through sb's agent's file API; found is false for a 404.
func (e *agentEnv) readFile(t *testing.T, sb *sandboxv1beta1.Sandbox, p string) (content string, found bool) {
	t.Helper()
	base, hc := e.agent(t, sb)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/files"+p, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("Reading %s from Sandbox %s: %v", p, sb.Name, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	switch res.StatusCode {
	case http.StatusOK:
		return string(b), true
	case http.StatusNotFound:
		return "", false
	}
	t.Fatalf("Reading %s from Sandbox %s: %s %s", p, sb.Name, res.Status, b)
	return "", false
}

// podUIDs maps each Sandbox of the pool to its Pod's UID.
func podUIDs(t *testing.T, ns, pool string) map[string]string {
	t.Helper()
	members, err := poolMembers(t, ns, pool)
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, sb := range members {
		uids[sb.Name] = string(framework.Read[corev1.Pod](t, env, ns, sb.Name).UID)
	}
	return uids
}

// TestWarmClaimTakesSettingsThroughItsAgent checks that a warm claim with env and a secret file
// is served by a pool member, its Pod kept, and is Ready only once the member's agent took the
// settings: a process started through the agent then sees the variable and the file. The next
// claim of the pool sees neither.
func TestWarmClaimTakesSettingsThroughItsAgent(t *testing.T) {
	e := startWithAgents(t)
	env.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: e.ns}, Data: map[string][]byte{"token": []byte("s3cr3t")}})
	env.Create(t, settingsTemplate("python", e.ns, e.port))
	env.Create(t, testutil.MakePool("pool", e.ns, "python").Replicas(2).Obj())
	waitForPoolReady(t, e.ns, "pool", 2)
	pods := podUIDs(t, e.ns, "pool")

	c1 := makeClaimWithSettings("c1", e.ns, "TOKEN", "claim-1", extv1beta1.SecretFile{SecretName: "api", MountPath: settingsDir})
	env.Create(t, c1)
	claim := waitReady(t, e.ns, "c1")
	sb := framework.Read[sandboxv1beta1.Sandbox](t, env, e.ns, claim.Status.Sandbox.Name)
	want, member := pods[sb.Name]
	if !member || sb.Labels[sandboxv1beta1.LaunchTypeLabel] != extv1beta1.LaunchTypeWarm {
		t.Fatalf("claim c1 got Sandbox %s (launch type %q); want one of the pool's members %v", sb.Name, sb.Labels[sandboxv1beta1.LaunchTypeLabel], pods)
	}
	if got := string(framework.Read[corev1.Pod](t, env, e.ns, sb.Name).UID); got != want {
		t.Errorf("Sandbox %s's Pod has UID %s, want the member's %s: the settings must not restart it", sb.Name, got, want)
	}
	if got := e.printenv(t, sb, "TOKEN"); got != "claim-1\n" {
		t.Errorf("a process started through the agent: TOKEN = %q, want %q", got, "claim-1\n")
	}
	if got, found := e.readFile(t, sb, settingsDir+"/token"); got != "s3cr3t" {
		t.Errorf("%s/token: %q (found %t), want the Secret's %q", settingsDir, got, found, "s3cr3t")
	}

	env.Create(t, testutil.MakeClaim("c2", e.ns).WarmPool("pool").Obj())
	other := framework.Read[sandboxv1beta1.Sandbox](t, env, e.ns, waitReady(t, e.ns, "c2").Status.Sandbox.Name)
	if other.Name == sb.Name {
		t.Fatalf("claims c1 and c2 share Sandbox %s", sb.Name)
	}
	if got := e.printenv(t, other, "TOKEN"); got != "" {
		t.Errorf("claim c2's process sees TOKEN = %q, claim c1's", got)
	}
	if got, found := e.readFile(t, other, settingsDir+"/token"); found {
		t.Errorf("claim c2's sandbox holds claim c1's file: %q", got)
	}
}

// TestWarmClaimWithSettingsWrites checks that settings cost a warm claim no API write: the
// claim controller writes the bind and the claim's status (and the observability annotations),
// as for a plain warm claim (TestWarmClaimWrites); the settings go to the agent.
func TestWarmClaimWithSettingsWrites(t *testing.T) {
	log := env.NewWriteLog()
	e := startWithAgents(t, log.Counting())
	env.Create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: e.ns}, Data: map[string][]byte{"token": []byte("s3cr3t")}})
	env.Create(t, settingsTemplate("python", e.ns, e.port))
	env.Create(t, testutil.MakePool("pool", e.ns, "python").Replicas(1).Obj())
	waitForPoolReady(t, e.ns, "pool", 1)
	time.Sleep(quiet) // let the pool and its member settle, then start counting
	log.Take()

	env.Create(t, makeClaimWithSettings("c1", e.ns, "TOKEN", "claim-1", extv1beta1.SecretFile{SecretName: "api", MountPath: settingsDir}))
	claim := waitReady(t, e.ns, "c1")
	framework.Consistently(t, quiet, func() (bool, string) {
		return hasReady("True", "")(framework.Read[extv1beta1.SandboxClaim](t, env, e.ns, "c1")), "claim lost Ready"
	})
	var got []string
	for _, w := range log.Take() {
		if strings.HasSuffix(w, " by "+sandboxclaim.FieldManager) {
			got = append(got, w)
		}
	}
	want := []string{
		"PATCH Sandbox/" + claim.Status.Sandbox.Name + " by " + sandboxclaim.FieldManager,
		"UPDATE SandboxClaim/c1/status by " + sandboxclaim.FieldManager,
		"PATCH SandboxClaim/c1 by " + sandboxclaim.FieldManager,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claim controller writes for one warm claim with settings mismatch (-want +got):\n%s", diff)
	}
	if claim.Status.Sandbox.Name == "c1" {
		t.Errorf("claim c1 started cold; want a warm member")
	}
}

// makeClaimWithSettings is a claim of pool "pool" with one variable and the secret files.
func makeClaimWithSettings(name, ns, envName, envValue string, files ...extv1beta1.SecretFile) *extv1beta1.SandboxClaim {
	c := testutil.MakeClaim(name, ns).WarmPool("pool").Env(envName, envValue, "").Obj()
	c.Spec.SecretFiles = files
	return c
}

// TestSecretFilesOutsideAllowedPathsAreRejected checks that a claim whose secretFiles path the
// template does not allow gets no sandbox, and a message naming the path and the field.
func TestSecretFilesOutsideAllowedPathsAreRejected(t *testing.T) {
	ns := startController(t)
	env.Create(t, settingsTemplate("python", ns, 7070))
	claim := testutil.MakeClaim("c", ns).Template("python").Obj()
	claim.Spec.SecretFiles = []extv1beta1.SecretFile{{SecretName: "api", MountPath: "/home/user/.config"}}
	env.Create(t, claim)
	got := waitNotReady(t, ns, "c", extv1beta1.ClaimReasonSecretFilesRejected)
	if msg := readyCondition(got).Message; !strings.Contains(msg, "/home/user/.config") || !strings.Contains(msg, "allowedSecretFilePaths") {
		t.Errorf("message %q; want it to name the path and claimPolicy.allowedSecretFilePaths", msg)
	}
	noSandboxNamed(t, ns, "c")
}

// TestAdmissionRefusesSecretsTheCreatorCannotRead checks config/admission's secret-files policy:
// a user who may create claims but not get Secret hidden cannot name it in spec.secretFiles, and
// can name Secret readable, which RBAC lets it get.
func TestAdmissionRefusesSecretsTheCreatorCannotRead(t *testing.T) {
	ns := env.NewNamespace(t)
	const user = "claim-creator"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxclaims"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"readable"}},
	}
	env.Create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules})
	env.Create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	as, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	claimNaming := func(name string, secrets ...string) *extv1beta1.SandboxClaim {
		c := testutil.MakeClaim(name, ns).WarmPool("pool").Obj()
		for i, s := range secrets {
			c.Spec.SecretFiles = append(c.Spec.SecretFiles, extv1beta1.SecretFile{SecretName: s, MountPath: settingsDir + "/" + strconv.Itoa(i)})
		}
		return c
	}

	framework.Eventually(t, func() (bool, string) { // RBAC reaches the authorizer in the background
		err := as.Create(t.Context(), claimNaming("readable", "readable"), client.DryRunAll)
		return err == nil, "creating a claim naming Secret readable: " + errString(err)
	})
	err = as.Create(t.Context(), claimNaming("hidden", "readable", "hidden"), client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "spec.secretFiles[1]: "+user+" may not get Secret hidden in namespace "+ns) {
		t.Errorf("creating a claim naming Secret hidden: %v; want Forbidden naming Secret hidden (only), the user and get", err)
	}
	if err := env.Client.Create(t.Context(), claimNaming("admin", "hidden"), client.DryRunAll); err != nil {
		t.Errorf("the administrator, who may read every Secret, creating a claim naming Secret hidden: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "accepted"
	}
	return err.Error()
}

// TestClaimIdlePolicyReachesItsSandbox checks that a claim's idlePolicy replaces its template's
// on the sandbox it gets, warm (the bind patch) and cold (the created Sandbox).
func TestClaimIdlePolicyReachesItsSandbox(t *testing.T) {
	ns := startController(t)
	tpl := testutil.MakeTemplate("python", ns).Unmanaged().Obj()
	tpl.Spec.IdlePolicy = &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: time.Hour}}
	env.Create(t, tpl)
	env.Create(t, testutil.MakePool("pool", ns, "python").Replicas(1).Obj())
	waitForPoolReady(t, ns, "pool", 1)
	policy := &sandboxv1beta1.IdlePolicy{SuspendAfter: metav1.Duration{Duration: 5 * time.Minute},
		RunningProcesses: sandboxv1beta1.IdleProcessPolicyIgnore, Wake: sandboxv1beta1.WakePolicyManual}

	for _, c := range []*extv1beta1.SandboxClaim{
		testutil.MakeClaim("warm", ns).WarmPool("pool").Obj(),
		testutil.MakeClaim("cold", ns).Template("python").Obj(),
	} {
		c.Spec.IdlePolicy = policy
		env.Create(t, c)
		claim := waitReady(t, ns, c.Name)
		sb := framework.Read[sandboxv1beta1.Sandbox](t, env, ns, claim.Status.Sandbox.Name)
		if diff := cmp.Diff(policy, sb.Spec.IdlePolicy); diff != "" {
			t.Errorf("claim %s's Sandbox %s (launch type %s): idlePolicy (-want the claim's +got):\n%s",
				c.Name, sb.Name, sb.Labels[sandboxv1beta1.LaunchTypeLabel], diff)
		}
	}
}
