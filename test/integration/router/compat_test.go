package router

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/compat/pyruntime"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// TestPythonRuntimeOutputThroughTheRouter sends POST /execute the way agent-sandbox's SDKs do
// (routing headers, through kubox-router) to real agents: more than 5 MiB on stdout and on
// stderr comes back whole and byte-identical, and a command past an agent's configured output
// limit is answered with an error status naming the limit, never with output cut short.
func TestPythonRuntimeOutputThroughTheRouter(t *testing.T) {
	ns := env.NewNamespace(t)
	rt := startRouter(t, ns, withSharedToken)
	big := startAgentSandbox(t, ns, "big")
	limited := &agentSandbox{apiPort: freePort(t), compatPort: freePort(t), dir: t.TempDir()}
	limited.sb = createSandbox(t, ns, "limited", &sandboxv1beta1.AgentSpec{Port: ptr.To(int32(limited.apiPort)),
		CompatibilityPort: ptr.To(int32(limited.compatPort))})
	framework.StartAgent(t, agent.Config{Port: limited.apiPort, CompatPort: limited.compatPort, CompatAuth: true,
		Token: framework.AgentAuth(key, limited.sb.UID), WorkDir: limited.dir, CompatBaseDir: limited.dir,
		SandboxdRoot: limited.dir, CompatMaxOutputBytes: ptr.To[int64](1 << 20)})
	markReady(t, limited.sb, framework.LoopbackIP)
	headers := func(a *agentSandbox) []string {
		return []string{"Content-Type: application/json", "X-Sandbox-ID: " + a.sb.Name, "X-Sandbox-Namespace: " + ns,
			"X-Sandbox-Port: " + strconv.Itoa(a.compatPort), bearer(sharedToken)}
	}

	res := eventuallyStatus(t, http.StatusOK, http.MethodPost, rt.url+"/execute",
		`{"command": "sh -c 'seq 1 800000; seq 1 800000 >&2'"}`, headers(big)...)
	var got pyruntime.ExecuteResponse
	if err := json.Unmarshal([]byte(res.body), &got); err != nil {
		t.Fatalf("POST /execute answered %.300s: %v", res.body, err)
	}
	want := testutil.SeqOutput(800000)
	if len(want) <= 5<<20 {
		t.Fatalf("the test's output has %d bytes, want more than 5 MiB", len(want))
	}
	if got.Stdout != want || got.Stderr != want || got.ExitCode != 0 {
		t.Errorf("POST /execute: %d bytes of stdout, %d of stderr, exit code %d; want %d bytes of each, identical, and 0",
			len(got.Stdout), len(got.Stderr), got.ExitCode, len(want))
	}

	res = eventuallyStatus(t, http.StatusInsufficientStorage, http.MethodPost, rt.url+"/execute", `{"command": "yes"}`, headers(limited)...)
	got = pyruntime.ExecuteResponse{}
	if err := json.Unmarshal([]byte(res.body), &got); err != nil || got.ExitCode == 0 || got.Stdout != "" ||
		!strings.Contains(got.Stderr, "1048576 bytes (1 MiB)") || !strings.Contains(got.Stderr, "--"+agent.FlagCompatMaxOutputBytes) {
		t.Errorf("POST /execute of yes past a 1 MiB limit: %.500s; want 507 naming the limit and its setting", res.body)
	}
}
