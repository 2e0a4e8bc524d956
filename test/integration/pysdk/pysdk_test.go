package pysdk

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const (
	// testsDir holds the Python SDK's integration tests, relative to the repository's root.
	testsDir = "sdk/python/tests/integration"
	// agentImage is kubox-controller's agent image; no Pod pulls it.
	agentImage = "kubox.local/kubox-agent:dev"
	// pendingImage marks Pods the Kubelet leaves Pending: those of the template "pending".
	pendingImage = "kubox.local/never-starts:dev"
	// poolReplicas is the size of the warm pool "python".
	poolReplicas = 2
)

// pyEnv is the environment the Python tests run against.
type pyEnv struct {
	ns        string
	key       []byte
	agentPort int
	routerURL string
	// devToken is ServiceAccount dev's token, allowed to claim sandboxes and connect to them;
	// noConnectToken is ServiceAccount noconnect's, allowed the same but connecting.
	devToken, noConnectToken string
	// kubeconfig is a file that connects as dev to ns, with the router's URL.
	kubeconfig string
}

// TestPythonSDK runs sdk/python/tests/integration with pytest against a real environment (see
// the package's documentation), after checking from Go that a warm sandbox runs a command
// through the router. These variables tell the Python tests about it:
//
//	KUBECONFIG                   as ServiceAccount dev in the test's namespace, with the router's URL (kubox.dev/router)
//	KUBOX_TEST_NAMESPACE         the test's namespace
//	KUBOX_TEST_ROUTER_URL        kubox-router's URL
//	KUBOX_TEST_ROUTER_SERVICE    a Service in KUBOX_TEST_NAMESPACE whose Pod reaches the router through the
//	                             API server's port-forward (a Node whose kubelet runs the kubelet's handler)
//	KUBOX_TEST_POOL              a SandboxWarmPool of 2 ready sandboxes of KUBOX_TEST_TEMPLATE
//	KUBOX_TEST_TEMPLATE          a SandboxTemplate whose sandboxes start at once
//	KUBOX_TEST_PENDING_TEMPLATE  a SandboxTemplate whose Pods stay Pending
//	KUBOX_TEST_DEV_TOKEN         ServiceAccount dev's token (the kubeconfig's)
//	KUBOX_TEST_NOCONNECT_TOKEN   a token RBAC allows the same but connecting: the router answers 403
//
// PYTHONPATH is sdk/python/src; KUBOX_ROUTER_URL is not inherited, PYTEST_ADDOPTS is.
func TestPythonSDK(t *testing.T) {
	testutil.RequirePytest(t)
	start := time.Now()
	e := setup(t)
	checkThroughRouter(t, e)
	t.Logf("The environment took %s to set up", time.Since(start).Round(time.Millisecond))
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	testutil.RunPytest(t, root, testsDir,
		"KUBECONFIG="+e.kubeconfig,
		"KUBOX_TEST_NAMESPACE="+e.ns,
		"KUBOX_TEST_ROUTER_URL="+e.routerURL,
		"KUBOX_TEST_ROUTER_SERVICE="+routerService,
		"KUBOX_TEST_POOL=python",
		"KUBOX_TEST_TEMPLATE=python",
		"KUBOX_TEST_PENDING_TEMPLATE=pending",
		"KUBOX_TEST_DEV_TOKEN="+e.devToken,
		"KUBOX_TEST_NOCONNECT_TOKEN="+e.noConnectToken)
}

// setup starts kubox, the Kubelet, the sandboxes' agents, the router and its port-forward in a new namespace,
// creates the templates "python" and "pending" and the pool "python", waits until the pool is
// ready, and gives ServiceAccounts dev and noconnect their tokens and RBAC.
func setup(t *testing.T) *pyEnv {
	t.Helper()
	e := &pyEnv{ns: env.NewNamespace(t), key: []byte(strings.Repeat("0123456789abcdef", 3)), agentPort: framework.FreePort(t)}
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, append(e.key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	env.StartKubelet(t, e.ns, framework.WithLoopbackPodIPs()).SetFate(framework.ImageFate(pendingImage, framework.LeavePending))
	env.ServeSandboxAgents(t, e.ns, e.key, e.agentPort)
	env.StartKubox(t, e.ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = keyFile
	})
	env.Create(t, e.template("python").Obj())
	env.Create(t, e.template("pending").Image(pendingImage).Obj())
	pool := testutil.MakePool("python", e.ns, "python").Replicas(poolReplicas).Obj()
	env.Create(t, pool)
	framework.WaitForObject(t, env, pool, func(p *extv1beta1.SandboxWarmPool) (bool, string) {
		return p.Status.ReadyReplicas == poolReplicas, fmt.Sprintf("pool python has %d ready members; want %d", p.Status.ReadyReplicas, poolReplicas)
	})
	_, e.routerURL = env.StartRouter(t, e.ns, e.key, nil)
	e.servePortForward(t, e.routerURL)
	e.devToken = e.serviceAccount(t, "dev", true)
	e.noConnectToken = e.serviceAccount(t, "noconnect", false)
	e.kubeconfig = e.writeKubeconfig(t)
	return e
}

// template starts a SandboxTemplate whose sandboxes run kubox-agent on the agents' port.
func (e *pyEnv) template(name string) *testutil.TemplateWrapper {
	w := testutil.MakeTemplate(name, e.ns).Unmanaged()
	w.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(e.agentPort)), CompatibilityPort: ptr.To[int32](0)}
	return w
}

// serviceAccount creates ServiceAccount name and returns its token. RBAC allows it to claim
// sandboxes, read and patch them and read Secrets (the SDK's direct mode) and, with connect,
// to connect to claims and sandboxes through the router, also through a port-forward.
func (e *pyEnv) serviceAccount(t *testing.T, name string, connect bool) string {
	t.Helper()
	tok := env.ServiceAccountToken(t, e.ns, name)
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxclaims"},
			Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes"},
			Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}
	if connect {
		rules = append(rules, framework.ConnectRule(extv1beta1.GroupVersion.Group, "sandboxclaims"),
			framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"))
		rules = append(rules, portForwardRules...)
	}
	env.Grant(t, e.ns, name, name, rules...)
	return tok
}

// writeKubeconfig writes a kubeconfig that connects to the API server as ServiceAccount dev, in
// the test's namespace, with the router's URL in the cluster's kubox.dev/router extension, and
// returns its path.
func (e *pyEnv) writeKubeconfig(t *testing.T) string {
	t.Helper()
	router, err := json.Marshal(map[string]string{"url": e.routerURL})
	if err != nil {
		t.Fatal(err)
	}
	cluster := &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData,
		InsecureSkipTLSVerify: len(env.Config.CAData) == 0,
		Extensions:            map[string]runtime.Object{contract.RouterKubeconfigExtension: &runtime.Unknown{Raw: router, ContentType: runtime.ContentTypeJSON}}}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubox-test"] = cluster
	cfg.AuthInfos["dev"] = &clientcmdapi.AuthInfo{Token: e.devToken}
	cfg.Contexts["dev"] = &clientcmdapi.Context{Cluster: "kubox-test", AuthInfo: "dev", Namespace: e.ns}
	cfg.CurrentContext = "dev"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("Writing the kubeconfig: %v", err)
	}
	return path
}

// checkThroughRouter runs `echo hi` in a member of the pool through the router as dev, and checks
// that the router turns away a caller without a token (401) and noconnect (403).
func checkThroughRouter(t *testing.T, e *pyEnv) {
	t.Helper()
	sb := poolMember(t, e.ns)
	url := fmt.Sprintf("%s/sandboxes/%s/%s/kubox.agent.v1.ProcessService/RunProcess", e.routerURL, e.ns, sb)
	body := `{"spec":{"argv":["echo","hi"]}}`
	if code, out := post(t, url, "", body); code != http.StatusUnauthorized {
		t.Fatalf("RunProcess in Sandbox %s without a token: %d %s; want 401", sb, code, out)
	}
	if code, out := post(t, url, e.noConnectToken, body); code != http.StatusForbidden {
		t.Fatalf("RunProcess in Sandbox %s as noconnect: %d %s; want 403", sb, code, out)
	}
	// The Sandbox's agent starts once its watch sees the Sandbox's Pod IP.
	framework.Eventually(t, func() (bool, string) {
		code, out := post(t, url, e.devToken, body)
		var res struct{ Stdout []byte }
		if code != http.StatusOK || json.Unmarshal(out, &res) != nil || string(res.Stdout) != "hi\n" {
			return false, fmt.Sprintf("RunProcess in Sandbox %s as dev: %d %s; want 200 and stdout hi", sb, code, out)
		}
		return true, ""
	})
}

// poolMember returns the name of a ready Sandbox of the pool python.
func poolMember(t *testing.T, ns string) string {
	t.Helper()
	list := &sandboxv1beta1.SandboxList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("Listing Sandboxes: %v", err)
	}
	for _, sb := range list.Items {
		owner := metav1.GetControllerOf(&sb)
		if owner != nil && owner.Kind == "SandboxWarmPool" && owner.Name == "python" &&
			meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady) {
			return sb.Name
		}
	}
	t.Fatalf("Pool python has no ready Sandbox among the %d of namespace %s", len(list.Items), ns)
	return ""
}

// post sends body to url as JSON, with token as the bearer token when it is not empty, and
// returns the response's status and body.
func post(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("Reading the response of POST %s: %v", url, err)
	}
	return resp.StatusCode, out
}
