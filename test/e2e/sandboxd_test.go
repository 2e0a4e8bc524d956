//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/sandboxd"
	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
	"github.com/kubox-dev/kubox/test/conformance"
)

// withSandboxdEnv sets the variables agent-sandbox v1's templates give the workload container,
// through which its SDKs find sandboxd (and kubox-agent the ports to serve sandboxd's wire on).
func withSandboxdEnv(spec map[string]any) {
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	c := podSpec["containers"].([]any)[0].(map[string]any)
	c["env"] = []any{
		map[string]any{"name": contract.SandboxdGRPCAddrEnv, "value": "localhost:" + strconv.Itoa(contract.SandboxdGRPCPort)},
		map[string]any{"name": contract.SandboxdRESTAddrEnv, "value": "localhost:" + strconv.Itoa(contract.SandboxdRESTPort)},
	}
}

// TestSandboxdConformanceOnTheNode runs the sandboxd conformance suite (what agent-sandbox v1's
// SDKs do: Execute, Start with stdin and a signal, PTY resize, files, WatchDir, health, gRPC-Web)
// against a Python sandbox under gVisor, through the local environment's kubox-router with
// agent-sandbox's header routing, as a ServiceAccount that RBAC lets connect to that sandbox.
// The agent requires its token on sandboxd's ports (compatibilityAuth Required, the default):
// the router adds it because the controller recorded the ports in status.agent.
func TestSandboxdConformanceOnTheNode(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("sandboxd", "gvisor", withPython, withAgent, withSandboxdEnv))
	waitSandboxReady(t, ns, "sandboxd")
	tok := serviceAccountWithConnect(t, ns, "sdk", "sandboxd")

	route := func(port int) map[string]string {
		return map[string]string{"authorization": "Bearer " + tok, "x-sandbox-id": "sandboxd",
			"x-sandbox-namespace": ns, "x-sandbox-port": strconv.Itoa(port)}
	}
	header := func(port int) http.Header {
		h := http.Header{}
		for k, v := range route(port) {
			h.Set(k, v)
		}
		return h
	}
	tg := &conformance.Target{
		Conn:       conformance.Dial(t, strings.TrimPrefix(routerURL, "http://"), route(contract.SandboxdGRPCPort)),
		GRPCURL:    routerURL,
		GRPCHeader: header(contract.SandboxdGRPCPort),
		REST:       routerURL,
		Header:     header(contract.SandboxdRESTPort),
		Root:       sandboxd.DefaultRoot,
	}
	// The file's mode is read by a command in the sandbox, not by sandboxd's file API under test.
	tg.FileMode = func(t *testing.T, path string) (fs.FileMode, error) {
		res := &processv1.ExecuteResponse{}
		err := tg.Conn.Invoke(context.Background(), "/process.v1.ProcessService/Execute", &processv1.ExecuteRequest{
			Config: &processv1.ProcessConfig{Command: []string{"stat", "-c", "%a", sandboxd.DefaultRoot + "/" + path}}}, res)
		if err != nil {
			return 0, err
		}
		if res.GetExitCode() != 0 {
			return 0, fmt.Errorf("stat %s: exit code %d: %s", path, res.GetExitCode(), res.GetStderr())
		}
		mode, err := strconv.ParseUint(strings.TrimSpace(string(res.GetStdout())), 8, 32)
		return fs.FileMode(mode), err
	}
	conformance.Run(t, tg)
}
