package sdk

import (
	"errors"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestThroughTheRouter is the SDK's default path outside a cluster: a ServiceAccount whose RBAC
// allows claims and connecting to them claims a warm sandbox, runs a command and moves a file
// through a real kubox-router (TokenReview, SubjectAccessReview, the agent token it derives);
// a claim token minted for the claim opens that sandbox and no other, and stops working once
// the claim is gone.
func TestThroughTheRouter(t *testing.T) {
	f := setup(t)
	env.Create(t, testutil.MakePool("python", f.ns, "python").Replicas(2).Obj())
	_, routerURL := env.StartRouter(t, f.ns, f.key, nil)

	tok := claimerToken(t, f.ns, "dev")
	dev, err := kubox.New(env.ConfigFor(tok), kubox.Options{Namespace: f.ns, RouterURL: routerURL, ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Close() })

	sb, err := dev.Claim(t.Context(), kubox.FromPool("python"))
	if err != nil {
		t.Fatalf("Claim as ServiceAccount dev: %v", err)
	}
	f.startAgent(t, sb)
	res, err := sb.RunCmd(t.Context(), kubox.Cmd{Shell: "echo through the router; exit 4"})
	if err != nil || res.ExitCode != 4 || string(res.Stdout) != "through the router\n" {
		t.Fatalf("RunCmd through the router = %+v, %v; want exit 4 and the line", res, err)
	}
	if err := sb.Files().WriteFile(t.Context(), "/tmp/r.txt", []byte("routed"), 0o644); err != nil {
		t.Fatalf("WriteFile through the router: %v", err)
	}
	if got, err := sb.Files().ReadFile(t.Context(), "/tmp/r.txt"); err != nil || string(got) != "routed" {
		t.Errorf("ReadFile through the router = %q, %v; want routed", got, err)
	}

	claimToken, exp, err := dev.MintClaimToken(t.Context(), f.ns, sb.ClaimName(), 10*time.Minute)
	if err != nil {
		t.Fatalf("MintClaimToken: %v", err)
	}
	if until := time.Until(exp); until <= 0 || until > 11*time.Minute {
		t.Errorf("claim token expires in %s; want about 10 minutes", until)
	}
	// A process handed only the claim token (and read access to the API) reaches that sandbox.
	holder, err := kubox.New(env.Config, kubox.Options{Namespace: f.ns, RouterURL: routerURL, Token: claimToken, ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close() })
	same, err := holder.Connect(t.Context(), sb.ClaimName())
	if err != nil {
		t.Fatalf("Connect with the claim token: %v", err)
	}
	if got, err := same.Files().ReadFile(t.Context(), "/tmp/r.txt"); err != nil || string(got) != "routed" {
		t.Errorf("ReadFile with the claim token = %q, %v; want the file written before", got, err)
	}
	if res, err := same.Run(t.Context(), "echo", "claim token"); err != nil || string(res.Stdout) != "claim token\n" {
		t.Errorf("Run with the claim token = %+v, %v", res, err)
	}
	other := otherReadySandbox(t, f, sb.Name())
	elsewhere, err := holder.Open(t.Context(), f.ns, other)
	if err != nil {
		t.Fatalf("Open %s: %v", other, err)
	}
	if _, err := elsewhere.Run(t.Context(), "true"); !errors.Is(err, kubox.ErrForbidden) {
		t.Errorf("the claim token on sandbox %s: %v; want ErrForbidden", other, err)
	}

	if err := sb.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	framework.Eventually(t, func() (bool, string) {
		_, err := same.Run(t.Context(), "true")
		return errors.Is(err, kubox.ErrUnauthorized), fmt.Sprintf("the claim token after the claim was deleted: %v; want ErrUnauthorized", err)
	})
}

// claimerToken returns the token of a new ServiceAccount sa of ns whose RBAC allows what a
// client of the router needs: claims (create, get, list, watch, delete), reading sandboxes, and
// connecting to both through the router.
func claimerToken(t *testing.T, ns, sa string) string {
	t.Helper()
	tok := env.ServiceAccountToken(t, ns, sa)
	env.Grant(t, ns, sa, sa,
		rbacv1.PolicyRule{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxclaims"},
			Verbs: []string{"create", "get", "list", "watch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes"},
			Verbs: []string{"get", "list", "watch"}},
		framework.ConnectRule(extv1beta1.GroupVersion.Group, "sandboxclaims"),
		framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"))
	return tok
}

// otherReadySandbox returns a Ready pool member other than name.
func otherReadySandbox(t *testing.T, f *fixture, name string) string {
	t.Helper()
	var other string
	framework.Eventually(t, func() (bool, string) {
		var list sandboxv1beta1.SandboxList
		if err := env.Client.List(t.Context(), &list, client.InNamespace(f.ns)); err != nil {
			return false, err.Error()
		}
		for _, s := range list.Items {
			if s.Name != name && meta.IsStatusConditionTrue(s.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
				other = s.Name
				return true, ""
			}
		}
		return false, fmt.Sprintf("no Ready sandbox besides %s among %d", name, len(list.Items))
	})
	return other
}
