package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestTokenOpensOnlyTheClaimsSandbox mints a claim token with kubox token, as a ServiceAccount
// allowed to connect to claims, through a real kubox-router: the token alone (no Kubernetes
// credentials sent to the router) runs a command in the claim's sandbox, and the router refuses
// it on another sandbox.
func TestTokenOpensOnlyTheClaimsSandbox(t *testing.T) {
	f := setup(t)
	// other is Ready (the Kubelet starts its Pod) but has no agent: the router refuses the token
	// before dialing it.
	other := f.sandbox(t, "other")
	framework.WaitForObject(t, env, other, func(sb *sandboxv1beta1.Sandbox) (bool, string) {
		return len(sb.Status.PodIPs) > 0, "sandbox other has no Pod IP yet"
	})
	f.withAgents()
	env.Create(t, f.template("python").Obj())
	go f.serveNext(t)
	f.mustRun(t, "claim", "--template", "python", "--name", "mine")
	_, routerURL := env.StartRouter(t, f.ns, f.key, nil)

	tok := env.ServiceAccountToken(t, f.ns, "minter")
	env.Grant(t, f.ns, "minter", "minter", framework.ConnectRule(extv1beta1.GroupVersion.Group, "sandboxclaims", "mine"))
	asMinter := []string{"--kubeconfig", kubeconfigWithToken(t, tok), "--connection", "router", "--router-url", routerURL}

	r := f.mustRun(t, append([]string{"token", "mine", "--ttl", "10m"}, asMinter...)...)
	claimToken := strings.TrimSuffix(r.stdout, "\n")
	if claimToken == "" || strings.ContainsAny(claimToken, " \n") {
		t.Fatalf("kubox token printed %q; want the token alone on a line", r.stdout)
	}

	r = f.mustRun(t, append([]string{"token", "mine", "-o", "json"}, asMinter...)...)
	var out struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expiresAt"`
		Claim     string    `json:"claim"`
		Namespace string    `json:"namespace"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("kubox token -o json printed %q: %v", r.stdout, err)
	}
	if out.Token == "" || out.Claim != "mine" || out.Namespace != f.ns || !out.ExpiresAt.After(time.Now()) {
		t.Errorf("kubox token -o json = %+v; want a token for claim mine in %s that expires later", out, f.ns)
	}

	withToken := []string{"--token", claimToken, "--connection", "router", "--router-url", routerURL}
	r = f.run(t, append(withToken, "exec", "--claim", "mine", "--", "echo", "hi")...)
	if r.code != 0 || r.stdout != "hi\n" {
		t.Errorf("kubox exec --claim mine with the claim token: exit %d, stdout %q, stderr %q; want hi", r.code, r.stdout, r.stderr)
	}
	r = f.run(t, append(withToken, "exec", "other", "--", "echo", "hi")...)
	if r.code != 1 || !strings.Contains(r.stderr, "403") {
		t.Errorf("kubox exec other with mine's claim token: exit %d, stderr %q; want 1 and a message naming the router's 403", r.code, r.stderr)
	}

	t.Log("Without RBAC on the claim, minting is refused")
	r = f.run(t, append([]string{"token", "someone-elses"}, asMinter...)...)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "someone-elses") {
		t.Errorf("kubox token someone-elses: exit %d, stdout %q, stderr %q; want 1 and an error naming the claim", r.code, r.stdout, r.stderr)
	}
}

// kubeconfigWithToken writes the test environment's kubeconfig with token as its only credential.
func kubeconfigWithToken(t *testing.T, token string) string {
	t.Helper()
	cfg, err := clientcmd.Load(env.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
