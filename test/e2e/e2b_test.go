//go:build e2e

package e2e

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/devenv"
	"github.com/kubox-dev/kubox/internal/testutil/ingress"
)

// e2bDir holds the conformance program and its pinned `e2b` npm package (`make e2b-deps`).
const e2bDir = "test/e2b"

// TestE2BSDKConformance runs E2B's stock JavaScript SDK (test/e2b/conformance.test.mjs, node
// --test) against the local environment's kubox-router (--e2b-domain=e2b.localhost) and the
// kubox-agent in warm gVisor sandboxes of the python pool, the E2B template "python". What an
// E2B user changes is all that changes: E2B_DOMAIN and E2B_API_KEY (a ServiceAccount token of
// the test's namespace). The test stands in for what production puts in front of the router:
// a TLS terminator for *.e2b.localhost and the wildcard DNS record (test/e2b/resolve.mjs).
func TestE2BSDKConformance(t *testing.T) {
	requireController(t)
	requireE2BDeps(t)
	ns := namespace(t)
	pythonPool(t, ns, 2)
	// fork and Sandbox.create(snapshotID) start claims from a snapshot: the template allows it
	// (docs/e2b.md, an administrator's choice).
	patch := []byte(`{"spec":{"claimPolicy":{"snapshotRefPolicy":"Allowed"}}}`)
	if _, err := dyn.Resource(templates).Namespace(ns).Patch(t.Context(), "python", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("allowing snapshotRefs on SandboxTemplate python: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), "node", "--import", "./resolve.mjs", "--test",
		"--test-concurrency=1", "--test-reporter=tap", "conformance.test.mjs")
	cmd.Dir = filepath.Join(repoDir, e2bDir)
	cmd.Env = append(os.Environ(), e2bEnv(t, ns)...)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test conformance.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("E2B's SDK failed against kubox: %v", err)
	}
	tap := string(out)
	if !strings.Contains(tap, "# fail 0") || !strings.Contains(tap, "# skipped 0") || regexp.MustCompile(`# pass 0\b`).MatchString(tap) {
		t.Errorf("the conformance suite did not run every test (see the output above)")
	}
}

func requireE2BDeps(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repoDir, e2bDir, "node_modules", "e2b", "package.json")); err != nil {
		t.Fatalf("E2B's SDK is not installed in %s (%v): run `make e2b-deps` (make test-e2e does)", e2bDir, err)
	}
}

// e2bEnv is the environment of an E2B program pointed at the local router: a user
// ServiceAccount of ns with the RBAC docs/e2b.md gives, its token as the API key, and a TLS
// terminator on 127.0.0.1 for the router's E2B hosts.
func e2bEnv(t testing.TB, ns string) []string {
	t.Helper()
	front, caFile := ingress.TLS(t, routerURL, devenv.E2BDomain)
	_, port, err := net.SplitHostPort(front)
	if err != nil {
		t.Fatal(err)
	}
	key := contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(e2bUserToken(t, ns)))
	return []string{
		"E2B_DOMAIN=" + net.JoinHostPort(devenv.E2BDomain, port),
		"E2B_API_KEY=" + key,
		"KUBOX_E2B_TEMPLATE=python",
		"KUBOX_E2B_RESOLVE=" + devenv.E2BDomain,
		"NODE_EXTRA_CA_CERTS=" + caFile,
	}
}

// e2bUserToken creates ServiceAccount e2b-user in ns (unless it is there: a benchmark runs more
// than once), bound to the Role of docs/e2b.md, and returns an hour-long token of it.
func e2bUserToken(t testing.TB, ns string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "e2b-user"}}
	if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "e2b-user"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"extensions.agents.x-k8s.io"}, Resources: []string{"sandboxclaims"}, Verbs: []string{"create", "get", "list", "delete", "patch"}},
		{APIGroups: []string{"extensions.agents.x-k8s.io"}, Resources: []string{"sandboxwarmpools", "sandboxtemplates"}, Verbs: []string{"get"}},
		{APIGroups: []string{"agents.x-k8s.io"}, Resources: []string{"sandboxes"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"extensions.agents.x-k8s.io"}, Resources: []string{"sandboxclaims/connect"}, Verbs: []string{"create"}},
		// pause (it keeps the files in a SandboxSnapshot), fork and snapshots
		{APIGroups: []string{"extensions.agents.x-k8s.io"}, Resources: []string{"sandboxsnapshots"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{"agents.x-k8s.io"}, Resources: []string{"sandboxes/connect"}, Verbs: []string{"create"}},
	}}
	if _, err := clientset.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2b-user"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "e2b-user"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "e2b-user", Namespace: ns}}}
	if _, err := clientset.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	tok, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "e2b-user", req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// servingCert makes a P-256 serving certificate for names, valid for a day, signed by parent's
// key; with a nil parent it signs itself and may sign others (a client trusts it as its own
// root). It returns the certificate with its key, and the certificate as PEM.
func servingCert(t testing.TB, parent *x509.Certificate, parentKey crypto.Signer, names ...string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
