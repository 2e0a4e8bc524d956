package sdk

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

func TestClaimFromAWarmPoolRunsAndCloses(t *testing.T) {
	f := setup(t)
	pool := testutil.MakePool("python", f.ns, "python").Replicas(1).Obj()
	env.Create(t, pool)
	framework.WaitForObject(t, env, pool, func(p *extv1beta1.SandboxWarmPool) (bool, string) {
		return p.Status.ReadyReplicas == 1, fmt.Sprintf("pool has %d ready members; want 1", p.Status.ReadyReplicas)
	})

	sb, err := f.sdk.Claim(t.Context(), kubox.FromPool("python"))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	claim := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, sb.ClaimName())
	if !strings.HasPrefix(claim.Name, kubox.ClaimGenerateName) || claim.Labels[sandboxv1beta1.CreatedByLabel] != kubox.CreatedBy ||
		claim.Spec.WarmPoolRef == nil || claim.Spec.WarmPoolRef.Name != "python" || claim.Status.Sandbox.Name != sb.Name() {
		t.Errorf("claim %s: labels %v, spec %+v, status.sandbox %q; want a generated kubox- name, created-by=%s, "+
			"warmPoolRef python, bound to %s", claim.Name, claim.Labels, claim.Spec, claim.Status.Sandbox.Name, kubox.CreatedBy, sb.Name())
	}
	if got := sb.Object().Labels[sandboxv1beta1.LaunchTypeLabel]; got != extv1beta1.LaunchTypeWarm {
		t.Errorf("launch-type = %q; want the pool's warm sandbox", got)
	}
	f.startAgent(t, sb)

	res, err := sb.RunCmd(t.Context(), kubox.Cmd{Shell: "echo out; echo err >&2; exit 7"})
	if err != nil {
		t.Fatalf("RunCmd: %v", err)
	}
	if res.ExitCode != 7 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("RunCmd = exit %d, stdout %q, stderr %q; want 7, out, err", res.ExitCode, res.Stdout, res.Stderr)
	}
	res, err = sb.Run(t.Context(), "sh", "-c", "kill -TERM $$")
	if err != nil || res.ExitCode != 128+15 || res.Signal != "SIGTERM" {
		t.Errorf("Run(kill itself) = %+v, %v; want exit 143 by SIGTERM and no error", res, err)
	}

	if err := sb.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	env.WaitGone(t, claim)
	if err := sb.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v; want none", err)
	}
}

func TestClaimFromATemplateWithOptions(t *testing.T) {
	f := setup(t)
	env.Create(t, f.template("with-env").EnvVarsInjectionPolicy(extv1beta1.EnvVarsInjectionPolicyAllowed).Obj())

	before := time.Now()
	sb, err := f.sdk.Claim(t.Context(), kubox.FromTemplate("with-env"), kubox.WithName("mine"), kubox.WithTTL(time.Hour),
		kubox.WithEnv(map[string]string{"GREETING": "hi"}), kubox.WithLabels(map[string]string{"app": "sdk-test"}),
		kubox.WithPodLabels(map[string]string{"sandbox.users.io/team": "a"}))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if sb.ClaimName() != "mine" || sb.Namespace() != f.ns {
		t.Errorf("ClaimName, Namespace = %q, %q; want mine, %s", sb.ClaimName(), sb.Namespace(), f.ns)
	}
	claim := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, "mine")
	lc := claim.Spec.Lifecycle
	if lc == nil || lc.ShutdownPolicy != extv1beta1.ClaimShutdownPolicyDelete || lc.ShutdownTime == nil ||
		lc.ShutdownTime.Before(&metav1.Time{Time: before.Add(time.Hour - time.Second)}) || lc.ShutdownTime.After(time.Now().Add(time.Hour)) {
		t.Errorf("lifecycle = %+v; want shutdownTime an hour from the claim and shutdownPolicy Delete", lc)
	}
	if claim.Labels["app"] != "sdk-test" || len(claim.Spec.Env) != 1 || claim.Spec.Env[0].Name != "GREETING" ||
		claim.Spec.AdditionalPodMetadata.Labels["sandbox.users.io/team"] != "a" {
		t.Errorf("claim labels %v, env %v, pod metadata %+v; want app=sdk-test, GREETING, team=a", claim.Labels, claim.Spec.Env, claim.Spec.AdditionalPodMetadata)
	}
	obj := sb.Object()
	if obj.Labels[sandboxv1beta1.LaunchTypeLabel] != extv1beta1.LaunchTypeCold || len(obj.Status.PodIPs) == 0 {
		t.Errorf("Sandbox labels %v, podIPs %v; want a cold sandbox with a Pod IP", obj.Labels, obj.Status.PodIPs)
	}
	pod := framework.Read[corev1.Pod](t, env, f.ns, sb.Name())
	if !hasEnv(pod, "GREETING", "hi") {
		t.Errorf("Pod env = %v; want GREETING=hi", pod.Spec.Containers[0].Env)
	}
}

func hasEnv(pod *corev1.Pod, name, value string) bool {
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

func TestClaimFailuresNameTheCauseAndDeleteTheClaim(t *testing.T) {
	f := setup(t)
	cases := map[string]struct {
		src  kubox.ClaimSource
		opts []kubox.ClaimOption
		want []string
	}{
		"missing pool": {src: kubox.FromPool("no-such-pool"),
			want: []string{"WarmPoolNotFound", `create SandboxWarmPool "no-such-pool" in namespace ` + f.ns}},
		"missing template": {src: kubox.FromTemplate("no-such-template"),
			want: []string{"TemplateNotFound", "no-such-template"}},
		"env the template rejects": {src: kubox.FromTemplate("python"), opts: []kubox.ClaimOption{kubox.WithEnv(map[string]string{"X": "1"})},
			want: []string{"EnvVarsInjectionRejected", "envVarsInjectionPolicy"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb, err := f.sdk.Claim(t.Context(), tc.src, tc.opts...)
			if !errors.Is(err, kubox.ErrClaimFailed) || sb != nil {
				t.Fatalf("Claim = %v, %v; want ErrClaimFailed", sb, err)
			}
			for _, w := range append(tc.want, "SandboxClaim "+f.ns+"/kubox-") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q; want it to contain %q", err, w)
				}
			}
		})
	}
	noClaimsLeft(t, f.ns)
}

func TestClaimTimeoutNamesTheLastConditionAndDeletesTheClaim(t *testing.T) {
	f := setup(t)
	env.Create(t, f.template("stuck").Image(pendingImage).Obj())
	c, err := kubox.New(env.Config, kubox.Options{Namespace: f.ns, Connection: kubox.ConnectDirect, ReadyTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, err = c.Claim(t.Context(), kubox.FromTemplate("stuck"))
	if !errors.Is(err, kubox.ErrTimeout) || !strings.Contains(err.Error(), "not Ready after 3s") ||
		!strings.Contains(err.Error(), "DependenciesNotReady") {
		t.Fatalf("Claim = %v; want ErrTimeout naming the claim's last Ready condition (DependenciesNotReady)", err)
	}
	noClaimsLeft(t, f.ns)
}

// noClaimsLeft checks that ns has no SandboxClaims, or only ones being deleted.
func noClaimsLeft(t *testing.T, ns string) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		list := &extv1beta1.SandboxClaimList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var left []string
		for _, c := range list.Items {
			if c.DeletionTimestamp == nil {
				left = append(left, c.Name)
			}
		}
		return len(left) == 0, "claims left: " + strings.Join(left, ", ")
	})
}

func TestConnectAndOpen(t *testing.T) {
	f := setup(t)
	claimed, err := f.sdk.Claim(t.Context(), kubox.FromTemplate("python"), kubox.WithName("shared"))
	if err != nil {
		t.Fatal(err)
	}
	f.startAgent(t, claimed)

	other, err := kubox.New(env.Config, kubox.Options{Connection: kubox.ConnectDirect, ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close() }()
	connected, err := other.Connect(t.Context(), "shared", kubox.InNamespace(f.ns))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if connected.Name() != claimed.Name() || connected.ClaimName() != "shared" {
		t.Errorf("Connect = %s (claim %q); want %s (claim shared)", connected, connected.ClaimName(), claimed)
	}
	if _, err := other.Connect(t.Context(), "absent", kubox.InNamespace(f.ns)); !errors.Is(err, kubox.ErrNotFound) {
		t.Errorf("Connect(absent) = %v; want ErrNotFound", err)
	}

	opened, err := other.Open(t.Context(), f.ns, claimed.Name())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if opened.ClaimName() != "" {
		t.Errorf("Open's ClaimName = %q; want none", opened.ClaimName())
	}
	if res, err := opened.Run(t.Context(), "echo", "opened"); err != nil || string(res.Stdout) != "opened\n" {
		t.Errorf("Run through Open = %+v, %v", res, err)
	}
	if err := opened.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if found, err := env.Get(t, &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shared"}}); !found || err != nil {
		t.Errorf("the claim after closing a sandbox opened by name: found %v, %v; want it kept", found, err)
	}
	if err := connected.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	env.WaitGone(t, &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shared"}})
}

func TestConnectDirectSendsTheAgentTokenFromTheSecret(t *testing.T) {
	f := setup(t)
	sb, err := f.sdk.Claim(t.Context(), kubox.FromTemplate("python"))
	if err != nil {
		t.Fatal(err)
	}
	// An agent that expects another token turns the SDK away, naming the sandbox.
	stop := f.startAgentWithToken(t, "a-token-for-some-other-sandbox-0123456789")
	if _, err := sb.Run(t.Context(), "true"); !errors.Is(err, kubox.ErrUnauthorized) || !strings.Contains(err.Error(), sb.String()) {
		t.Errorf("Run against an agent with another token = %v; want ErrUnauthorized naming %s", err, sb)
	}
	stop()
	// An agent with the token in the sandbox's Secret lets it in.
	secret := framework.Read[corev1.Secret](t, env, f.ns, sb.Name()+"-kubox-agent")
	f.startAgentWithToken(t, string(secret.Data["token"]))
	if res, err := sb.Run(t.Context(), "true"); err != nil || res.ExitCode != 0 {
		t.Errorf("Run with the Secret's token = %+v, %v; want exit 0", res, err)
	}
}

func TestCreateClaimReturnsAtOnceAndConnectWaitsForIt(t *testing.T) {
	f := setup(t)
	claim, err := f.sdk.CreateClaim(t.Context(), kubox.FromTemplate("python"), kubox.WithName("later"), kubox.WithTTL(time.Hour))
	if err != nil {
		t.Fatalf("CreateClaim: %v", err)
	}
	if claim.Name != "later" || claim.Namespace != f.ns || claim.UID == "" || claim.Status.Sandbox.Name != "" {
		t.Errorf("CreateClaim returned %s/%s (uid %q, status.sandbox %q); want the created claim later, not bound yet",
			claim.Namespace, claim.Name, claim.UID, claim.Status.Sandbox.Name)
	}
	stored := framework.Read[extv1beta1.SandboxClaim](t, env, f.ns, "later")
	if stored.Labels[sandboxv1beta1.CreatedByLabel] != kubox.CreatedBy || stored.Spec.Lifecycle == nil {
		t.Errorf("claim labels %v, lifecycle %v; want created-by %s and the TTL's shutdown time", stored.Labels, stored.Spec.Lifecycle, kubox.CreatedBy)
	}

	sb, err := f.sdk.Connect(t.Context(), "later")
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	f.startAgent(t, sb)
	if res, err := sb.Run(t.Context(), "echo", "hi"); err != nil || string(res.Stdout) != "hi\n" {
		t.Errorf("Run(echo hi) = %+v, %v; want hi", res, err)
	}
	if sb.ClaimName() != "later" {
		t.Errorf("Connect returned the sandbox of claim %q; want later", sb.ClaimName())
	}
	if err := sb.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	env.WaitGone(t, stored)
}

// TestClaimReportsProgress: WithProgress sees the claim's versions from Claim's one watch, the
// last of them Ready, and WatchSandbox follows the claimed Sandbox until told to stop.
func TestClaimReportsProgress(t *testing.T) {
	f := setup(t)
	var seen []*extv1beta1.SandboxClaim
	sb, err := f.sdk.Claim(t.Context(), kubox.FromTemplate("python"),
		kubox.WithProgress(func(c *extv1beta1.SandboxClaim) { seen = append(seen, c.DeepCopy()) }))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if len(seen) == 0 {
		t.Fatal("WithProgress was never called")
	}
	if last := seen[len(seen)-1]; last.Name != sb.ClaimName() || !meta.IsStatusConditionTrue(last.Status.Conditions, extv1beta1.ClaimConditionReady) {
		t.Errorf("last version reported: %s with conditions %+v; want %s, Ready", last.Name, last.Status.Conditions, sb.ClaimName())
	}
	calls := 0
	err = f.sdk.WatchSandbox(t.Context(), f.ns, sb.Name(), func(s *sandboxv1beta1.Sandbox) (bool, error) {
		calls++
		return s.Name == sb.Name() && len(s.Status.PodIPs) > 0, nil
	})
	if err != nil || calls == 0 {
		t.Errorf("WatchSandbox = %v after %d calls; want it to stop at the Ready sandbox", err, calls)
	}
}
