//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/devenv"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// routerURL is the local environment's kubox-router.
var routerURL = devenv.DefaultConfig().RouterURL()

// serviceAccountWithConnect creates ServiceAccount name, lets RBAC give it `create` on
// sandboxes/connect for the named sandboxes only, and returns a token for it.
func serviceAccountWithConnect(t *testing.T, ns, name string, sandboxNames ...string) string {
	t.Helper()
	cluster := &framework.Env{Config: restConfig} // the integration framework's helpers, on the local node
	tok := cluster.ServiceAccountToken(t, ns, name)
	cluster.Grant(t, ns, name, name, framework.ConnectRule("agents.x-k8s.io", "sandboxes", sandboxNames...))
	// The API server's authorizer learns of a new RoleBinding a moment later, and kubox-router
	// reuses a denial for its cache period: ask the API server until it allows, as the router will.
	user := "system:serviceaccount:" + ns + ":" + name
	for _, sb := range sandboxNames {
		waitFor(t, user+" allowed to connect to Sandbox "+sb, func(ctx context.Context) (bool, error) {
			sar, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
					ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: "agents.x-k8s.io",
						Resource: "sandboxes", Subresource: "connect", Namespace: ns, Name: sb}}}, metav1.CreateOptions{})
			return err == nil && sar.Status.Allowed, err
		})
	}
	return tok
}

// runThroughRouter runs argv in the sandbox through the router with bearer tok ("" for none).
func runThroughRouter(ns, sandbox, tok string, argv ...string) (*agentv1.RunProcessResponse, error) {
	httpc := http.DefaultClient
	if tok != "" {
		httpc = contract.BearerClient(tok)
	}
	procs := agentv1connect.NewProcessServiceClient(httpc, fmt.Sprintf("%s/sandboxes/%s/%s", routerURL, ns, sandbox))
	res, err := procs.RunProcess(context.Background(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: argv}}))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// TestRouterAuthorizesEachSandbox: kubox-router in the local environment lets a ServiceAccount
// that RBAC allows on sandbox A run a command in A through the sandbox's agent (the router adds
// the agent token it derives), refuses it on sandbox B (403), and refuses a caller with no token
// (401).
func TestRouterAuthorizesEachSandbox(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	for _, name := range []string{"router-a", "router-b"} {
		createSandbox(t, ns, newSandbox(name, "gvisor", withPython, withAgent))
	}
	for _, name := range []string{"router-a", "router-b"} {
		waitSandboxReady(t, ns, name)
	}
	alice := serviceAccountWithConnect(t, ns, "alice", "router-a")

	res, err := runThroughRouter(ns, "router-a", alice, "python3", "-c", "print(6*7)")
	if err != nil {
		t.Fatalf("alice runs python3 in router-a through %s: %v", routerURL, err)
	}
	if got := string(res.GetStdout()); got != "42\n" {
		t.Errorf("python3 through the router printed %q (stderr %q), want 42", got, res.GetStderr())
	}
	if _, err := runThroughRouter(ns, "router-b", alice, "true"); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("alice on router-b (no RBAC): %v, want permission denied (403)", err)
	}
	if _, err := runThroughRouter(ns, "router-a", "", "true"); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("no token on router-a: %v, want unauthenticated (401)", err)
	}
}

// TestPreviewHostReachesASandboxPort opens port 8080 of a gVisor sandbox (busybox httpd) the way
// a browser would, by preview host: http://8080-<status.previewID>.localhost:16090/ (the local
// environment's router serves previews under localhost), with the kubox-token cookie. Without
// credentials the router refuses it.
func TestPreviewHostReachesASandboxPort(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("web", "gvisor"))
	waitSandboxReady(t, ns, "web")
	sb, err := dyn.Resource(sandboxes).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := nestedString(sb, "status", "previewID")
	if len(id) != 12 {
		t.Fatalf("Sandbox web has status.previewID %q; want 12 characters", id)
	}
	host := fmt.Sprintf("8080-%s.%s", id, devenv.PreviewDomain)
	get := func(cookie string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, routerURL+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host // what http://8080-<id>.localhost:16090/ sends; localhost names resolve to 127.0.0.1
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "kubox-token", Value: cookie})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET http://%s: %v", host, err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get(restConfig.BearerToken); code != http.StatusOK || body != "hello from kubox busybox" {
		t.Errorf("preview of port 8080 = %d %q; want busybox httpd's page", code, body)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("preview without credentials = %d; want 401", code)
	}
}
