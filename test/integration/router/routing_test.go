package router

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

func withSharedToken(c *router.Config) { c.SharedToken = []byte(sharedToken) }

// runEcho runs `echo` through the router with the agent's Connect client at base.
func runEcho(t *testing.T, base, tok, word string) (string, error) {
	t.Helper()
	c := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), base)
	res, err := c.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"echo", word}}}))
	if err != nil {
		return "", err
	}
	return string(res.Msg.GetStdout()), nil
}

func TestPathRoutesReachTheAgent(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	startAgentSandbox(t, ns, "box")
	createClaim(t, ns, "my-claim", "box")

	for name, base := range map[string]string{
		"sandbox path": rt.url + "/sandboxes/" + ns + "/box",
		"claim path":   rt.url + "/claims/" + ns + "/my-claim",
	} {
		t.Run(name, func(t *testing.T) {
			var out string
			eventually(t, func() (bool, string) {
				var err error
				out, err = runEcho(t, base, sharedToken, "hello")
				return err == nil, fmt.Sprint(err)
			})
			if out != "hello\n" {
				t.Errorf("stdout %q, want %q", out, "hello\n")
			}
		})
	}
	// Plain HTTP file contents on the agent's port, with the path after the sandbox's name.
	res := do(t, http.MethodPut, rt.url+"/sandboxes/"+ns+"/box/files/notes.txt", "written through the router", bearer(sharedToken))
	if res.code/100 != 2 {
		t.Fatalf("PUT /files/notes.txt: %s", res)
	}
	if res := do(t, http.MethodGet, rt.url+"/sandboxes/"+ns+"/box/files/notes.txt", "", bearer(sharedToken)); res.body != "written through the router" {
		t.Errorf("GET /files/notes.txt: %s", res)
	}
}

func TestHeaderRouteLikeAgentSandboxPythonSDK(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	a := startAgentSandbox(t, ns, "py")

	// What agent-sandbox's Python SDK sends: POST /execute with the routing headers.
	res := eventuallyStatus(t, http.StatusOK, http.MethodPost, rt.url+"/execute", `{"command": "echo from python"}`,
		"Content-Type: application/json", "X-Sandbox-ID: py", "X-Sandbox-Namespace: "+ns,
		"X-Sandbox-Port: "+strconv.Itoa(a.compatPort), bearer(sharedToken))
	var out struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(res.body), &out); err != nil || out.Stdout != "from python\n" || out.ExitCode != 0 {
		t.Errorf("POST /execute: %s; want stdout %q", res, "from python\n")
	}
}

func TestPreviewHostReachesTheAppPort(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, func(c *router.Config) { withSharedToken(c); c.PreviewDomain = "preview.test" })
	app := startRecordingServer(t)
	sb := createSandbox(t, ns, "web", &sandboxv1beta1.AgentSpec{})
	markReady(t, sb, "127.0.0.1")
	host := contract.PreviewHost(app.port(), contract.PreviewID(sb.UID), "preview.test") + ":8080"

	res := eventuallyStatus(t, http.StatusOK, http.MethodGet, rt.url+"/index.html?q=1", "", "Host: "+host,
		"Cookie: theme=dark; kubox-token="+sharedToken)
	if res.body != "app GET /index.html?q=1" {
		t.Errorf("answer %q, want the app's", res.body)
	}
	got := app.lastRequest(t)
	if got.Host != host {
		t.Errorf("the app saw Host %q, want the preview host %q (apps build links from it)", got.Host, host)
	}
	if a := got.Header.Get("Authorization"); a != "" {
		t.Errorf("the app got Authorization %q; an app port gets no agent token and never the client's", a)
	}
	if c := got.Header.Get("Cookie"); c != "theme=dark" {
		t.Errorf("the app got Cookie %q, want the client's cookies without kubox-token", c)
	}
	// The header works as well as the cookie, and an app port never sees it.
	if res := do(t, http.MethodGet, rt.url+"/", "", "Host: "+host, bearer(sharedToken)); res.code != http.StatusOK {
		t.Errorf("with the Authorization header: %s", res)
	}
	if a := app.lastRequest(t).Header.Get("Authorization"); a != "" {
		t.Errorf("the app got the client's Authorization %q", a)
	}
	// Without credentials, or with another id, a preview host is closed.
	if res := do(t, http.MethodGet, rt.url+"/", "", "Host: "+host); res.code != http.StatusUnauthorized {
		t.Errorf("no credentials: %s; want 401", res)
	}
	other := contract.PreviewHost(app.port(), contract.PreviewID("not-a-sandbox"), "preview.test")
	if res := do(t, http.MethodGet, rt.url+"/", "", "Host: "+other, bearer(sharedToken)); res.code != http.StatusNotFound || res.errorMessage() == "" {
		t.Errorf("unknown preview id: %s; want a JSON 404", res)
	}
}

func TestRoutingErrors(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	notReady := createSandbox(t, ns, "not-ready", &sandboxv1beta1.AgentSpec{})
	setStatus(t, notReady, []string{"127.0.0.1"}, metav1.ConditionFalse)
	noIP := createSandbox(t, ns, "no-ip", &sandboxv1beta1.AgentSpec{})
	setStatus(t, noIP, nil, metav1.ConditionTrue)
	down := createSandbox(t, ns, "down", &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(freePort(t)))})
	markReady(t, down, "127.0.0.1")
	auth := bearer(sharedToken)
	eventuallyStatus(t, http.StatusBadGateway, http.MethodGet, rt.url+"/sandboxes/"+ns+"/down/healthz", "", auth)
	retriesBefore := counter(t, rt, "sandbox_router_upstream_retries_total")

	cases := map[string]struct {
		method, url string
		headers     []string
		code        int
		message     string
	}{
		"unknown sandbox": {url: "/sandboxes/" + ns + "/nope/x", code: 404, message: "does not exist"},
		"unknown claim":   {url: "/claims/" + ns + "/nope/x", code: 404, message: "does not exist"},
		"not ready":       {url: "/sandboxes/" + ns + "/not-ready/x", code: 503, message: "is not ready"},
		"no pod IP":       {url: "/sandboxes/" + ns + "/no-ip/x", code: 503, message: "no pod IP"},
		"agent down":      {url: "/sandboxes/" + ns + "/down/x", code: 502, message: "could not connect"},
		"bad id header":   {url: "/execute", headers: []string{"X-Sandbox-ID: Not_A_Name"}, code: 400, message: "X-Sandbox-ID"},
		"bad port header": {url: "/execute", headers: []string{"X-Sandbox-ID: down", "X-Sandbox-Port: 70000"}, code: 400, message: "X-Sandbox-Port"},
		"bad timeout":     {url: "/sandboxes/" + ns + "/down/x", headers: []string{"X-Sandbox-Timeout: soon"}, code: 400, message: "X-Sandbox-Timeout"},
		"bad namespace":   {url: "/sandboxes/Bad_NS/down/x", code: 400, message: "not a namespace name"},
		"no route":        {url: "/somewhere", code: 400, message: "does not know where"},
		"other namespace": {url: "/sandboxes/elsewhere/box/x", code: 404, message: "not served by this router"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := do(t, http.MethodGet, rt.url+tc.url, "", append(tc.headers, auth)...)
			if res.code != tc.code || !strings.Contains(res.errorMessage(), tc.message) {
				t.Errorf("%s: %s; want %d with a JSON error containing %q", tc.url, res, tc.code, tc.message)
			}
		})
	}
	if after := counter(t, rt, "sandbox_router_upstream_retries_total"); after < retriesBefore+float64(router.DefaultUpstreamMaxRetries) {
		t.Errorf("sandbox_router_upstream_retries_total went from %v to %v; want %d more dial retries for the sandbox that is down",
			retriesBefore, after, router.DefaultUpstreamMaxRetries)
	}
}
