package router

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestGeneratedClusterRoleIsEnough runs the router as a ServiceAccount bound to nothing but the
// ClusterRole `make manifests` generates from its markers (config/rbac/router/role.yaml): it
// syncs its caches, reviews a caller's token and permission, mints a claim token and proxies to
// the sandbox. A marker missing from internal/router/rbac.go fails here before it fails an
// install. The role has no Secrets in it, and on Pods only reads (the router binds a pod IP to
// the sandbox's Pod): no writes, no exec, attach or port-forward.
func TestGeneratedClusterRoleIsEnough(t *testing.T) {
	ns := env.NewNamespace(t)
	role := generatedRouterRole(t)
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			switch {
			case res == "secrets":
				t.Errorf("the router's ClusterRole grants %v on secrets; it must not read them", r.Verbs)
			case strings.HasPrefix(res, "pods/"):
				t.Errorf("the router's ClusterRole grants %v on %s; it must not reach into Pods", r.Verbs, res)
			case res == "pods" && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }):
				t.Errorf("the router's ClusterRole grants %v on pods; it may only read them", r.Verbs)
			}
		}
	}
	routerToken := bindGeneratedRouterRole(t, ns)

	_, url := env.StartRouterAs(t, env.ConfigFor(routerToken), ns, key, nil)
	startAgentSandbox(t, ns, "box")
	createClaim(t, ns, "claim", "box")
	user := serviceAccountToken(t, ns, "user")
	grantConnect(t, ns, "user", claimsGroup, "sandboxclaims", "claim")

	eventuallyStatus(t, http.StatusOK, http.MethodGet, url+"/claims/"+ns+"/claim/healthz", "", bearer(user))
	res := do(t, http.MethodPost, url+"/v1/claims/"+ns+"/claim/token", "", bearer(user))
	if res.code != http.StatusOK {
		t.Fatalf("minting a claim token as the least-privileged router: %s", res)
	}
}

// generatedRouterRole reads the ClusterRole generated into config/rbac/router.
func generatedRouterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "rbac", "router", "role.yaml"))
	if err != nil {
		t.Fatalf("reading the generated ClusterRole (make manifests writes it): %v", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(b, role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) == 0 {
		t.Fatal("config/rbac/router/role.yaml has no rules")
	}
	return role
}

// bindGeneratedRouterRole creates the ClusterRole generated into config/rbac/router (under a
// name of this test's own), binds ServiceAccount kubox-router of ns to it alone, and returns
// the ServiceAccount's token.
func bindGeneratedRouterRole(t *testing.T, ns string) string {
	t.Helper()
	role := generatedRouterRole(t)
	role.Name = "kubox-router-" + ns
	cs := env.Clientset(t)
	if _, err := cs.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok := env.ServiceAccountToken(t, ns, "kubox-router")
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kubox-router", Namespace: ns}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	return tok
}
