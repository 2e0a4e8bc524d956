//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withAgentSandboxProbes gives the container the probes of agent-sandbox's Python SDK template
// (clients/python/agentic-sandbox-client/python-sandbox-template.yaml): readiness and liveness
// GET / on 8888, python-runtime's port, which kubox-agent's compatibility port serves.
func withAgentSandboxProbes(spec map[string]any) {
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	c := podSpec["containers"].([]any)[0].(map[string]any)
	c["ports"] = []any{map[string]any{"containerPort": int64(8888)}}
	probe := func(initialDelay, period int64) map[string]any {
		return map[string]any{"httpGet": map[string]any{"path": "/", "port": int64(8888)},
			"initialDelaySeconds": initialDelay, "periodSeconds": period}
	}
	c["readinessProbe"] = probe(0, 1)
	c["livenessProbe"] = probe(2, 10)
}

// TestAgentSandboxTemplateProbesBecomeReady runs a sandbox with agent-sandbox's template probes
// and kubox-agent with compatibilityAuth Required (the default): kubelet's probes carry no token,
// and the Pod still becomes Ready, because the probe paths answer without one. Then a command's
// 5 MiB of output comes back whole through the compatibility port.
func TestAgentSandboxTemplateProbesBecomeReady(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("probed", "gvisor", withPython, withAgent, withAgentSandboxProbes))
	waitSandboxReady(t, ns, "probed")
	pod, err := clientset.CoreV1().Pods(ns).Get(context.Background(), "probed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !podReady(pod) {
		t.Fatalf("Sandbox probed is Ready but its Pod is not: %+v", pod.Status.Conditions)
	}
	if p := pod.Spec.Containers[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/" || p.HTTPGet.Port.IntValue() != 8888 {
		t.Fatalf("the container's readiness probe is %+v; want the template's GET / on 8888", p)
	}

	ip, tok := agentEndpoint(t, ns, "probed")
	code, out := agentHTTP(t, http.MethodPost, "http://"+ip+":8888/execute", tok,
		`{"command": "python3 -c 'import sys; sys.stdout.write(\"x\" * (5 << 20))'"}`)
	var got struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != http.StatusOK || got.Stdout != strings.Repeat("x", 5<<20) {
		t.Errorf("POST /execute of 5 MiB of output = %d with %d bytes of stdout (%v); want 200 and all 5 MiB", code, len(got.Stdout), err)
	}
}
