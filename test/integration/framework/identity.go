package framework

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/internal/testutil/agenttest"
)

// Clientset is a typed client for the API server, as the administrator.
func (e *Env) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ServiceAccountToken creates ServiceAccount name in ns and returns a one-hour token for it
// (TokenRequest), which the API server's TokenReview accepts.
func (e *Env) ServiceAccountToken(t testing.TB, ns, name string) string {
	t.Helper()
	cs := e.Clientset(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating ServiceAccount %s: %v", name, err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Requesting a token for ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// ConfigFor is the API server's address and CA with token as the only credential.
func (e *Env) ConfigFor(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = token
	return cfg
}

// Grant gives ServiceAccount sa of ns the rules, in a Role and RoleBinding named role.
func (e *Env) Grant(t testing.TB, ns, sa, role string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	cs := e.Clientset(t)
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns}, Rules: rules}
	if _, err := cs.RbacV1().Roles(ns).Create(t.Context(), r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating Role %s: %v", role, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Creating RoleBinding %s: %v", role, err)
	}
}

// ConnectRule allows `create` on <resource>/connect in group for the named objects (all when
// none is named): what kubox-router asks RBAC before it lets a caller reach a sandbox or claim.
func ConnectRule(group, resource string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource + "/connect"},
		Verbs: []string{"create"}, ResourceNames: names}
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listened on a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	return agenttest.FreePort(t)
}
