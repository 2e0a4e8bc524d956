// Package clientenv brings up the environment the SDKs' own test suites (Python's pytest,
// TypeScript's node --test) run against, in a namespace of the shared test API server: a real
// kube-apiserver and etcd, every kubox controller running as kubox-controller runs them (with an
// agent image and token key), and a real kubox-router in the test process. The framework's
// Kubelet starts every Pod Running and Ready with a loopback IP of its own (127.B.1.1,
// 127.B.1.2, ..., B from the process's PID), where a real kubox-agent, started in-process once
// the Sandbox reports that IP, serves the agent port with the token the controller derived for
// the Sandbox, its files in a temporary root. Pods of the image kubox.local/never-starts:dev
// stay Pending. Env.Vars describes it to a suite.
package clientenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const (
	// agentImage is kubox-controller's agent image; no Pod pulls it.
	agentImage = "kubox.local/kubox-agent:dev"
	// pendingImage marks Pods the Kubelet leaves Pending: those of the template "pending".
	pendingImage = "kubox.local/never-starts:dev"
	// poolReplicas is the size of the warm pool "python".
	poolReplicas = 2
)

// Env is the environment the SDKs' tests run against.
type Env struct {
	fw        *framework.Env
	NS        string
	agents    *framework.AgentNamespace
	RouterURL string
	// DevToken is ServiceAccount dev's token, allowed to claim sandboxes and connect to them;
	// NoConnectToken is ServiceAccount noconnect's, allowed the same but connecting.
	DevToken, NoConnectToken string
	// Kubeconfig is a file that connects as dev to NS, with the router's URL.
	Kubeconfig string
}

// Vars are the environment variables that describe e to an SDK's test suite:
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
func (e *Env) Vars() []string {
	return []string{
		"KUBECONFIG=" + e.Kubeconfig,
		"KUBOX_TEST_NAMESPACE=" + e.NS,
		"KUBOX_TEST_ROUTER_URL=" + e.RouterURL,
		"KUBOX_TEST_ROUTER_SERVICE=" + routerService,
		"KUBOX_TEST_POOL=python",
		"KUBOX_TEST_TEMPLATE=python",
		"KUBOX_TEST_PENDING_TEMPLATE=pending",
		"KUBOX_TEST_DEV_TOKEN=" + e.DevToken,
		"KUBOX_TEST_NOCONNECT_TOKEN=" + e.NoConnectToken,
	}
}

// Setup starts kubox, the Kubelet, the sandboxes' agents, the router and its port-forward in a
// new namespace of env, creates the templates "python" and "pending" and the pool "python",
// waits until the pool is ready, gives ServiceAccounts dev and noconnect their tokens and RBAC,
// and checks from Go that a warm sandbox runs a command through the router. env must have been
// started with framework.WithAgents.
func Setup(t *testing.T, env *framework.Env) *Env {
	t.Helper()
	start := time.Now()
	// The code interpreter on its contract port (run_code, runCode), with the host's interpreters.
	a := env.StartAgentNamespace(t, agentImage, nil, framework.WithReadinessProbes())
	a.Kubelet.SetFate(framework.ImageFate(pendingImage, framework.LeavePending))
	e := &Env{fw: env, NS: a.NS, agents: a}
	env.Create(t, e.template("python").Obj())
	env.Create(t, e.template("pending").Image(pendingImage).Obj())
	pool := testutil.MakePool("python", e.NS, "python").Replicas(poolReplicas).Obj()
	env.Create(t, pool)
	framework.WaitForObject(t, env, pool, func(p *extv1beta1.SandboxWarmPool) (bool, string) {
		return p.Status.ReadyReplicas == poolReplicas, fmt.Sprintf("pool python has %d ready members; want %d", p.Status.ReadyReplicas, poolReplicas)
	})
	_, e.RouterURL = env.StartRouter(t, e.NS, a.Key, nil)
	e.servePortForward(t, e.RouterURL)
	e.DevToken = e.serviceAccount(t, "dev", true)
	e.NoConnectToken = e.serviceAccount(t, "noconnect", false)
	e.Kubeconfig = e.writeKubeconfig(t)
	checkThroughRouter(t, e)
	t.Logf("The environment took %s to set up", time.Since(start).Round(time.Millisecond))
	return e
}

// StartRouter starts another kubox-router over e's namespace and agent token key, its
// configuration changed by mutate (a CORS origin, say), and returns its URL.
func (e *Env) StartRouter(t *testing.T, mutate func(*router.Config)) string {
	t.Helper()
	_, routerURL := e.fw.StartRouter(t, e.NS, e.agents.Key, mutate)
	return routerURL
}

// template starts a SandboxTemplate whose sandboxes run kubox-agent on the agents' port.
func (e *Env) template(name string) *testutil.TemplateWrapper {
	return e.agents.Template(name)
}

// serviceAccount creates ServiceAccount name and returns its token. RBAC allows it to claim
// sandboxes, read and patch them, snapshot and fork them (docs/sdk-go.md#rbac) and read Secrets
// (the SDK's direct mode) and, with connect,
// to connect to claims and sandboxes through the router, also through a port-forward.
func (e *Env) serviceAccount(t *testing.T, name string, connect bool) string {
	t.Helper()
	tok := e.fw.ServiceAccountToken(t, e.NS, name)
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxclaims"},
			Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes"},
			Verbs: []string{"get", "list", "watch", "patch", "create", "delete"}},
		{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxsnapshots"},
			Verbs: []string{"create", "get", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}
	if connect {
		rules = append(rules, framework.ConnectRule(extv1beta1.GroupVersion.Group, "sandboxclaims"),
			framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes"))
		rules = append(rules, portForwardRules...)
	}
	e.fw.Grant(t, e.NS, name, name, rules...)
	return tok
}

// writeKubeconfig writes a kubeconfig that connects to the API server as ServiceAccount dev, in
// the test's namespace, with the router's URL in the cluster's kubox.dev/router extension, and
// returns its path.
func (e *Env) writeKubeconfig(t *testing.T) string {
	t.Helper()
	router, err := json.Marshal(map[string]string{"url": e.RouterURL})
	if err != nil {
		t.Fatal(err)
	}
	cluster := &clientcmdapi.Cluster{Server: e.fw.Config.Host, CertificateAuthorityData: e.fw.Config.CAData,
		InsecureSkipTLSVerify: len(e.fw.Config.CAData) == 0,
		Extensions:            map[string]runtime.Object{contract.RouterKubeconfigExtension: &runtime.Unknown{Raw: router, ContentType: runtime.ContentTypeJSON}}}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubox-test"] = cluster
	cfg.AuthInfos["dev"] = &clientcmdapi.AuthInfo{Token: e.DevToken}
	cfg.Contexts["dev"] = &clientcmdapi.Context{Cluster: "kubox-test", AuthInfo: "dev", Namespace: e.NS}
	cfg.CurrentContext = "dev"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("Writing the kubeconfig: %v", err)
	}
	return path
}

// checkThroughRouter runs `echo hi` in a member of the pool through the router as dev, and checks
// that the router turns away a caller without a token (401) and noconnect (403).
func checkThroughRouter(t *testing.T, e *Env) {
	t.Helper()
	sb := poolMember(t, e.fw, e.NS)
	url := fmt.Sprintf("%s/sandboxes/%s/%s/kubox.agent.v1.ProcessService/RunProcess", e.RouterURL, e.NS, sb)
	body := `{"spec":{"argv":["echo","hi"]}}`
	if code, out := post(t, url, "", body); code != http.StatusUnauthorized {
		t.Fatalf("RunProcess in Sandbox %s without a token: %d %s; want 401", sb, code, out)
	}
	if code, out := post(t, url, e.NoConnectToken, body); code != http.StatusForbidden {
		t.Fatalf("RunProcess in Sandbox %s as noconnect: %d %s; want 403", sb, code, out)
	}
	// The Sandbox's agent starts once its watch sees the Sandbox's Pod IP.
	framework.Eventually(t, func() (bool, string) {
		code, out := post(t, url, e.DevToken, body)
		var res struct{ Stdout []byte }
		if code != http.StatusOK || json.Unmarshal(out, &res) != nil || string(res.Stdout) != "hi\n" {
			return false, fmt.Sprintf("RunProcess in Sandbox %s as dev: %d %s; want 200 and stdout hi", sb, code, out)
		}
		return true, ""
	})
}

// poolMember returns the name of a ready Sandbox of the pool python.
func poolMember(t *testing.T, env *framework.Env, ns string) string {
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

// routerService is the Service, in the test's namespace, whose EndpointSlice names the router's
// stand-in Pod: the SDK's port-forward mode finds the Pod through it.
const routerService = "kubox-router"

// portForwardRules let an identity find the router's Pod (its Service and EndpointSlices) and
// open a port-forward to it, as the SDK's port-forward mode needs.
var portForwardRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list"}},
	// A WebSocket port-forward is a GET that the API server authorizes as create.
	{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"get", "create"}},
}

// servePortForward makes the router, which listens at routerURL, reachable through the API
// server's port-forward: a Node whose kubelet endpoint is an HTTPS server on 127.0.0.1 that
// serves the kubelet's own port-forward handler (k8s.io/cri-streaming, which speaks SPDY and the
// v4.channel.k8s.io WebSocket protocol), a Pod "kubox-router" on that Node, and the Service
// routerService with an EndpointSlice naming the Pod and the router's port (and routerService
// "-down" with a port nothing listens on). Connections the handler forwards to the Pod go to
// the router's address.
func (e *Env) servePortForward(t *testing.T, routerURL string) {
	t.Helper()
	u, err := url.Parse(routerURL)
	if err != nil {
		t.Fatalf("Parsing the router's URL %q: %v", routerURL, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("The router's URL %q has no port: %v", routerURL, err)
	}
	kubelet := httptest.NewTLSServer(&forwarder{host: u.Hostname()})
	t.Cleanup(kubelet.Close)
	kubeletPort := kubelet.Listener.Addr().(*net.TCPAddr).Port

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-" + e.NS}}
	e.fw.Create(t, node)
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(kubeletPort)
	if err := e.fw.Client.Status().Update(t.Context(), node); err != nil {
		t.Fatalf("Setting Node %s's kubelet endpoint: %v", node.Name, err)
	}
	t.Cleanup(func() { _ = e.fw.Client.Delete(context.Background(), node) })

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kubox-router", Namespace: e.NS},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "router",
			Image: "kubox.local/kubox-router:dev", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}}}}
	e.fw.Create(t, pod)
	e.addRouterService(t, routerService, pod, port)
	// The same Pod behind a Service whose port nothing listens on: the kubelet reports the error.
	e.addRouterService(t, routerService+"-down", pod, framework.FreePort(t))
}

// addRouterService creates the Service name (port 8080, "http") and an EndpointSlice that names pod,
// with the Service's port at port. The endpoint's address is a documentation address (an
// EndpointSlice refuses loopback ones): port-forwarding goes to the Pod by name.
func (e *Env) addRouterService(t *testing.T, name string, pod *corev1.Pod, port int) {
	t.Helper()
	e.fw.Create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.NS},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}})
	e.fw.Create(t, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: e.NS,
			Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: e.NS, Name: pod.Name, UID: pod.UID}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}},
	})
}

// forwarder plays the container runtime's side of a port-forward: it copies each forwarded
// stream to and from host:port, where the Pod's port listens.
type forwarder struct{ host string }

// ServeHTTP answers the API server's requests for /portForward/<namespace>/<pod> with the
// kubelet's port-forward handler.
func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, found := strings.CutPrefix(r.URL.Path, "/portForward/")
	_, pod, ok := strings.Cut(rest, "/")
	if !found || !ok || pod == "" {
		http.Error(w, "not a port-forward: "+r.URL.Path, http.StatusNotFound)
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, r, f, pod, "", opts, time.Minute, 30*time.Second, portforward.SupportedProtocols)
}

// PortForward copies stream to and from the Pod's port until the Pod's side ends; the stream
// ending closes the Pod's side for writing.
func (f *forwarder) PortForward(ctx context.Context, _ string, _ string, port int32, stream io.ReadWriteCloser) error {
	defer func() { _ = stream.Close() }()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(f.host, strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("connecting to port %d of the Pod: %w", port, err)
	}
	defer func() { _ = conn.Close() }()
	go func() {
		_, _ = io.Copy(conn, stream)
		_ = conn.(*net.TCPConn).CloseWrite()
	}()
	if _, err := io.Copy(stream, conn); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("copying from port %d of the Pod: %w", port, err)
	}
	return nil
}

var _ portforward.PortForwarder = (*forwarder)(nil)
