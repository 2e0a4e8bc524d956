package e2b

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil/ingress"
)

// interpURL is the base URL of sandbox id's code interpreter, as @e2b/code-interpreter builds it.
func interpURL(id string) string {
	return "http://" + strconv.Itoa(contract.E2BCodeInterpreterPort) + "-" + id + "." + domain
}

// interp sends a request to sandbox id's code interpreter with headers and returns the status,
// the response's headers and its body.
func (f *fixture) interp(t *testing.T, method, id, path string, headers map[string]string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, interpURL(id)+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s of %s: %v", method, path, id, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	t.Logf("%s %s of %s: %d %s", method, path, id, res.StatusCode, b)
	return res.StatusCode, res.Header, b
}

// contextHeaders are what @e2b/code-interpreter sends on its context calls: no X-Access-Token,
// the traffic access token when the sandbox has one, and the sandbox's ID and port.
func contextHeaders(sb sandbox, traffic string) map[string]string {
	h := map[string]string{"E2b-Sandbox-Id": sb.SandboxID, "E2b-Sandbox-Port": strconv.Itoa(contract.E2BCodeInterpreterPort)}
	if traffic != "" {
		h[contract.E2BTrafficAccessTokenHeader] = traffic
	}
	return h
}

// TestCodeInterpreterThroughRouter: the code interpreter of an E2B sandbox through the router,
// as @e2b/code-interpreter sends its calls. create answers a trafficAccessToken, which opens the
// context calls of that sandbox; runCode's X-Access-Token opens /execute, whose NDJSON comes
// back; the router adds the agent token. The attacks: another sandbox's traffic token, no
// credentials, the traffic token on the control API, and looking for the agent token in every
// answer.
func TestCodeInterpreterThroughRouter(t *testing.T) {
	f := setup(t)
	a := f.create(t, map[string]any{"templateID": pool, "timeout": 600})
	b := f.create(t, map[string]any{"templateID": pool, "timeout": 600})
	if a.TrafficAccessToken == "" || b.TrafficAccessToken == "" {
		t.Errorf("create answered no trafficAccessToken: %+v, %+v", a, b)
	}
	var answers [][]byte
	record := func(h http.Header, body []byte) {
		hb, _ := json.Marshal(h)
		answers = append(answers, hb, body)
	}

	for name, hdrs := range map[string]map[string]string{
		"another sandbox's traffic token": contextHeaders(a, b.TrafficAccessToken),
		"no credentials":                  contextHeaders(a, ""),
	} {
		code, h, body := f.interp(t, http.MethodGet, a.SandboxID, "/contexts", hdrs, nil)
		record(h, body)
		want := http.StatusForbidden
		if name == "no credentials" {
			want = http.StatusUnauthorized
		}
		if code != want {
			t.Errorf("%s: listCodeContexts of %s answered %d, not %d", name, a.SandboxID, code, want)
		}
	}
	f.checkControlAPIRefusesTrafficToken(t, a)

	runHeaders := contextHeaders(a, "")
	runHeaders[contract.E2BAccessTokenHeader] = a.EnvdAccessToken
	code, h, body := f.interp(t, http.MethodPost, a.SandboxID, "/execute", runHeaders, map[string]any{"code": "x = 41\nprint('hi')\nx + 1"})
	record(h, body)
	if code != http.StatusOK || !ndjsonHas(body, "result", "42") || ndjsonText(body, "stdout") != "hi\n" {
		t.Errorf("runCode (no traffic token: the SDK sends none when create answered none) answered %d %s; want stdout hi and the result 42", code, body)
	}

	code, h, body = f.interp(t, http.MethodPost, a.SandboxID, "/contexts", contextHeaders(a, a.TrafficAccessToken), map[string]any{"language": "python"})
	record(h, body)
	var ctx struct {
		ID string `json:"id"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &ctx) != nil || ctx.ID == "" {
		t.Fatalf("createCodeContext with the traffic access token answered %d %s, not a context", code, body)
	}
	code, h, body = f.interp(t, http.MethodGet, a.SandboxID, "/contexts", contextHeaders(a, a.TrafficAccessToken), nil)
	record(h, body)
	if code != http.StatusOK || !strings.Contains(string(body), ctx.ID) {
		t.Errorf("listCodeContexts answered %d %s, without context %s", code, body, ctx.ID)
	}
	f.checkNoAgentToken(t, answers)
}

// checkControlAPIRefusesTrafficToken: the traffic access token, in any header a client might
// put it, opens nothing of E2B's control API.
func (f *fixture) checkControlAPIRefusesTrafficToken(t *testing.T, sb sandbox) {
	t.Helper()
	for name, h := range map[string][2]string{
		"as the traffic token": {contract.E2BTrafficAccessTokenHeader, sb.TrafficAccessToken},
		"as the API key":       {contract.E2BAPIKeyHeader, sb.TrafficAccessToken},
		"as an API key's hex":  {contract.E2BAPIKeyHeader, contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(sb.TrafficAccessToken))},
		"as a bearer token":    {"Authorization", contract.BearerScheme + " " + sb.TrafficAccessToken},
		"as the envd token":    {contract.E2BAccessTokenHeader, sb.TrafficAccessToken},
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api."+domain+"/sandboxes/"+sb.SandboxID, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(h[0], h[1])
		res, err := f.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("the traffic access token %s: the control API's getInfo answered %d, not 401", name, res.StatusCode)
		}
	}
}

// checkNoAgentToken: no answer, headers or body, holds the agent token of any sandbox of the
// test's namespace.
func (f *fixture) checkNoAgentToken(t *testing.T, answers [][]byte) {
	t.Helper()
	var list sandboxv1beta1.SandboxList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		tok := contract.DeriveAgentToken(f.key, list.Items[i].UID)
		for _, b := range answers {
			if bytes.Contains(b, []byte(tok)) {
				t.Errorf("an answer holds the agent token of sandbox %s: %s", list.Items[i].Name, b)
			}
		}
	}
}

// ndjsonText is the text of every message of type typ of /execute's NDJSON, in order.
func ndjsonText(body []byte, typ string) string {
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == typ {
			out.WriteString(m.Text)
		}
	}
	return out.String()
}

// ndjsonHas reports whether the NDJSON of /execute has a message of type typ whose text (or
// line, for output) is text.
func ndjsonHas(body []byte, typ, text string) bool {
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var m struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == typ && m.Text == text {
			return true
		}
	}
	return false
}

// TestStockCodeInterpreterThroughRouter runs @e2b/code-interpreter 2.8.0, unchanged and without
// any fetch wrapper, through the router as an E2B program does: Sandbox.create on the control
// API, then runCode (state across calls, streaming callbacks, errors, rich results), contexts
// created, listed, restarted and removed (test/e2b/codeinterp.test.mjs with KUBOX_CI_ROUTER=1).
// A TLS terminator on 127.0.0.1 and resolve.mjs stand in for an ingress and the wildcard DNS
// record, as in test/e2e's conformance run.
func TestStockCodeInterpreterThroughRouter(t *testing.T) {
	e2bDir := filepath.Join("..", "..", "e2b")
	if _, err := os.Stat(filepath.Join(e2bDir, "node_modules", "@e2b", "code-interpreter", "package.json")); err != nil {
		t.Fatalf("@e2b/code-interpreter is not installed in test/e2b (%v): run make e2b-deps", err)
	}
	f := setup(t)
	frontAddr, caFile := ingress.TLS(t, f.routerURL, domain)
	_, front, err := net.SplitHostPort(frontAddr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "node", "--import", "./resolve.mjs", "--test", "--test-reporter=tap", "codeinterp.test.mjs")
	cmd.Dir = e2bDir
	cmd.Env = append(os.Environ(), "KUBOX_CI_ROUTER=1", "E2B_DOMAIN="+domain+":"+front, "E2B_API_KEY="+f.apiKey,
		"KUBOX_E2B_TEMPLATE="+pool, "KUBOX_E2B_RESOLVE="+domain, "NODE_EXTRA_CA_CERTS="+caFile)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test codeinterp.test.mjs (through the router):\n%s", out)
	if err != nil {
		t.Fatalf("the stock client failed through the router: %v", err)
	}
	if tap := string(out); !strings.Contains(tap, "# fail 0") || regexp.MustCompile(`# pass 0\b`).MatchString(tap) {
		t.Errorf("the stock client's suite did not pass every test (see the output above)")
	}
}

// TestRunCodeThroughRouterFigures measures, and only logs, runCode through the router as
// @e2b/code-interpreter sends it: create → the first runCode result for five sandboxes in a row
// (the warm pool holds two; the rest start cold), then the round trip of `1 + 1` and of a 1 MiB
// print, 100 runs each. The figures are of this process-local setup (envtest, agents in the test
// process, 2 shared cores), not of a node.
func TestRunCodeThroughRouterFigures(t *testing.T) {
	f := setup(t)
	var sb sandbox
	var first []time.Duration
	for range 5 {
		start := time.Now()
		sb = f.create(t, map[string]any{"templateID": pool, "timeout": 600})
		f.runCodeText(t, sb, "1 + 1", "result", "2")
		first = append(first, time.Since(start))
	}
	mib := "print('x' * ((1 << 20) - 1))"
	for name, c := range map[string]struct{ code, typ, want string }{
		"1 + 1":         {"1 + 1", "result", "2"},
		"a 1 MiB print": {mib, "stdout", strings.Repeat("x", 1<<20-1) + "\n"},
	} {
		var took []time.Duration
		for range 100 {
			start := time.Now()
			f.runCodeText(t, sb, c.code, c.typ, c.want)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("runCode %s through the router, 100 runs: p50 %s, p99 %s", name, took[len(took)/2], took[len(took)*99/100])
	}
	slices.Sort(first)
	t.Logf("create → first runCode result, 5 sandboxes: p50 %s, max %s", first[len(first)/2], first[len(first)-1])
}

// runCodeText runs code in sb's default Python context as runCode does (X-Access-Token, no
// fetch wrapper) and fails unless the text of its typ messages is want.
func (f *fixture) runCodeText(t *testing.T, sb sandbox, code, typ, want string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"code": code})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, interpURL(sb.SandboxID)+"/execute", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range contextHeaders(sb, sb.TrafficAccessToken) {
		req.Header.Set(k, v)
	}
	req.Header.Set(contract.E2BAccessTokenHeader, sb.EnvdAccessToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	if got := ndjsonText(body, typ); res.StatusCode != http.StatusOK || got != want {
		t.Fatalf("runCode %q answered %d with %d bytes of %s, want %d: %.300s", code, res.StatusCode, len(got), typ, len(want), body)
	}
}
