package e2b

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const (
	agentImage = "kubox.local/kubox-agent:dev"
	// domain is the E2B domain the router serves (E2B_DOMAIN).
	domain = "e2b.kubox.test"
	// pool is a template with a warm pool of that name; cold a template without one.
	pool = "base"
	cold = "cold"
	// stuck is a template whose Pods never start (pendingImage).
	stuck        = "stuck"
	pendingImage = "kubox.local/never-starts:dev"
	user         = "e2b-user"
)

// fixture is one test's namespace with kubox, agents with envd's port, the router serving
// domain, and a ServiceAccount's API key.
type fixture struct {
	ns  string
	key []byte
	// apiKey is the ServiceAccount's token as E2B's JS SDK takes it: e2b_ and its hex.
	apiKey string
	token  string
	// hc dials every host at the router.
	hc *http.Client
	// routerURL is the router's base URL (http://127.0.0.1:port).
	routerURL string
}

func setup(t *testing.T, configure ...func(*router.Config)) *fixture {
	t.Helper()
	f := &fixture{ns: env.NewNamespace(t), key: []byte(strings.Repeat("0123456789abcdef", 3))}
	port := framework.FreePort(t)
	keyFile := filepath.Join(t.TempDir(), "agent-token-key")
	if err := os.WriteFile(keyFile, append(f.key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	env.StartKubelet(t, f.ns, framework.WithLoopbackPodIPs()).SetFate(framework.ImageFate(pendingImage, framework.LeavePending))
	env.ServeSandboxAgents(t, f.ns, f.key, port, func(c *agent.Config) {
		c.E2BPort, c.CodeInterpreterPort = contract.E2BEnvdPort, contract.E2BCodeInterpreterPort
		c.Process.Env = debianPythonFirst(os.Environ())
	})
	env.StartKubox(t, f.ns, func(c *configv1alpha1.ControllerConfiguration) {
		c.Agent.Image = agentImage
		c.Agent.TokenKeyFile = keyFile
	})
	for _, name := range []string{pool, cold} {
		tpl := testutil.MakeTemplate(name, f.ns).Unmanaged().EnvVarsInjectionPolicy(extv1beta1.EnvVarsInjectionPolicyAllowed).Obj()
		tpl.Spec.Agent = &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(port)), CompatibilityPort: ptr.To[int32](0)}
		env.Create(t, tpl)
	}
	env.Create(t, testutil.MakePool(pool, f.ns, pool).Replicas(2).Obj())
	env.Create(t, testutil.MakeTemplate(stuck, f.ns).Unmanaged().Image(pendingImage).Obj())
	f.token = env.ServiceAccountToken(t, f.ns, user)
	f.apiKey = contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(f.token))
	env.Grant(t, f.ns, user, "e2b", e2bRules()...)
	_, u := env.StartRouter(t, f.ns, f.key, func(c *router.Config) {
		c.E2BDomain = domain
		for _, cf := range configure {
			cf(c)
		}
	})
	f.routerURL = u
	addr := strings.TrimPrefix(u, "http://")
	f.hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	t.Cleanup(f.hc.CloseIdleConnections)
	return f
}

// debianPythonFirst is environ with /usr/bin first on PATH: the code interpreter's python3 is the
// host's Debian one, with matplotlib (make python-deps), as in test/integration/codeinterp,
// rather than one a version manager puts first.
func debianPythonFirst(environ []string) []string {
	out := []string{"PATH=/usr/bin:/bin:" + os.Getenv("PATH")}
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return out
}

// e2bRules is what an E2B user's ServiceAccount needs in its namespace (docs/e2b.md).
func e2bRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxclaims"},
			Verbs: []string{"create", "get", "list", "delete", "patch"}},
		{APIGroups: []string{extv1beta1.GroupVersion.Group}, Resources: []string{"sandboxwarmpools", "sandboxtemplates"}, Verbs: []string{"get"}},
		{APIGroups: []string{sandboxv1beta1.GroupVersion.Group}, Resources: []string{"sandboxes"}, Verbs: []string{"get", "patch"}},
		// create, connect, getInfo and resume answer an envd access token: only for connect rights.
		framework.ConnectRule(extv1beta1.GroupVersion.Group, "sandboxclaims"),
	}
}

// api calls E2B's control API with key (none when empty), sending body as JSON when not nil,
// and decodes the answer into out when not nil. It returns the status code.
func (f *fixture) api(t *testing.T, key, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://api."+domain+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(contract.E2BAPIKeyHeader, key)
	}
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Code != res.StatusCode || e.Message == "" {
			t.Errorf("%s %s answered %d with %q, not E2B's error JSON", method, path, res.StatusCode, b)
		}
		t.Logf("%s %s: %d %s", method, path, res.StatusCode, b)
		return res.StatusCode
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s answered %q: %v", method, path, b, err)
		}
	}
	return res.StatusCode
}

// sandbox is E2B's Sandbox answer.
type sandbox struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
	// TrafficAccessToken is what @e2b/code-interpreter sends on its context calls.
	TrafficAccessToken string `json:"trafficAccessToken"`
	Domain             string `json:"domain"`
}

// detail is E2B's SandboxDetail and ListedSandbox.
type detail struct {
	sandbox
	State    string            `json:"state"`
	EndAt    string            `json:"endAt"`
	Metadata map[string]string `json:"metadata"`
}

// create creates a sandbox from templateID and checks the answer.
func (f *fixture) create(t *testing.T, body map[string]any) sandbox {
	t.Helper()
	var sb sandbox
	if code := f.api(t, f.apiKey, http.MethodPost, "/sandboxes", body, &sb); code != http.StatusCreated {
		t.Fatalf("create answered %d, not 201", code)
	}
	if sb.SandboxID == "" || sb.EnvdAccessToken == "" || sb.Domain != domain || sb.EnvdVersion == "" {
		t.Fatalf("create answered %+v", sb)
	}
	return sb
}

// envdURL is the base URL of port of sandbox id, as E2B's SDKs build it.
func envdURL(id string) string {
	return "http://" + strconv.Itoa(contract.E2BEnvdPort) + "-" + id + "." + domain
}
