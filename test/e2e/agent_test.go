//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubox-dev/kubox/api/contract"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// withAgent asks for kubox-agent (spec.agent) with its defaults.
func withAgent(spec map[string]any) { spec["agent"] = map[string]any{} }

// agentEndpoint returns the sandbox's pod IP and its agent token, derived as the router does: from
// the local environment's key and the Sandbox's UID.
func agentEndpoint(t testing.TB, ns, name string) (string, string) {
	t.Helper()
	sb, err := dyn.Resource(sandboxes).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips, _, _ := unstructured.NestedStringSlice(sb.Object, "status", "podIPs")
	if len(ips) == 0 {
		t.Fatalf("Sandbox %s is Ready without status.podIPs", name)
	}
	key, err := contract.LoadAgentTokenKey(filepath.Join(stateDir, "etc", "agent-token-key"))
	if err != nil {
		t.Fatal(err)
	}
	return ips[0], contract.DeriveAgentToken(key, sb.GetUID())
}

// TestAgentMakesAPlainImageASandbox runs kubox.local/python:dev (no agent inside the image)
// under gVisor with spec.agent, and drives it through the agent: Python runs, files go in and
// out, agent-sandbox's python-runtime API answers, and a request without the token is refused.
func TestAgentMakesAPlainImageASandbox(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("agent-py", "gvisor", withPython, withAgent))
	waitSandboxReady(t, ns, "agent-py")
	ip, tok := agentEndpoint(t, ns, "agent-py")
	base := "http://" + ip + ":7070"

	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), base)
	res, err := procs.RunProcess(context.Background(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"python3", "-c", pythonProbe}}}))
	if err != nil {
		t.Fatalf("RunProcess through the agent at %s: %v", base, err)
	}
	var got pythonReport
	if err := json.Unmarshal(res.Msg.GetStdout(), &got); err != nil {
		t.Fatalf("python3 printed %q (stderr %q): %v", res.Msg.GetStdout(), res.Msg.GetStderr(), err)
	}
	if !got.GVisor || got.Squares != 333833500 || got.PID1 != "/.kubox/bin/kubox-agent" {
		t.Errorf("python3 through the agent reported %+v; want gVisor, the right sum, and the agent as PID 1", got)
	}

	body := "written through the agent\n"
	if code, _ := agentHTTP(t, http.MethodPut, base+"/files/tmp/e2e.txt", tok, body); code/100 != 2 {
		t.Fatalf("PUT /files/tmp/e2e.txt: %d", code)
	}
	cat, err := procs.RunProcess(context.Background(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"cat", "/tmp/e2e.txt"}}}))
	if err != nil || string(cat.Msg.GetStdout()) != body {
		t.Errorf("cat of the uploaded file = %q, %v; want %q", cat.Msg.GetStdout(), err, body)
	}

	code, out := agentHTTP(t, http.MethodPost, "http://"+ip+":8888/execute", tok, `{"command": "python3 -c 'print(6*7)'"}`)
	if code != 200 || !strings.Contains(out, `"stdout":"42\n"`) {
		t.Errorf("python-runtime's /execute = %d %s, want stdout 42", code, out)
	}

	anon := agentv1connect.NewProcessServiceClient(http.DefaultClient, base)
	_, err = anon.RunProcess(context.Background(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"true"}}}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("RunProcess without the token: %v, want unauthenticated", err)
	}
}

func agentHTTP(t *testing.T, method, url, tok, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
