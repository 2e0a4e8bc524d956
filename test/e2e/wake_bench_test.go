//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

// BenchmarkWake measures what a request to an idle-suspended sandbox waits for: from sending a
// GET through kubox-router to the first byte of the answer from the woken sandbox's agent (the
// router resumes the Sandbox, the controller recreates its Pod under gVisor, the Pod and agent
// become Ready, the router proxies). Each run suspends a fresh Ready sandbox and waits, untimed,
// until its Pod is gone. With a PVC, the Pod also mounts the sandbox's volume again. Compare with
// BenchmarkSandboxReady (a cold Sandbox create → Ready). Reports p50, p99 and max in ms
// (-benchtime 20x: over 20 wakes).
func BenchmarkWake(b *testing.B) {
	requireController(b)
	for _, v := range []struct {
		name string
		opts []sandboxOpt
	}{
		{"gvisor", []sandboxOpt{withPython, withAgent, withIdlePolicy("KeepAwake")}},
		{"gvisor+pvc", []sandboxOpt{withPython, withAgent, withVolume, withIdlePolicy("KeepAwake")}},
	} {
		b.Run(v.name, func(b *testing.B) {
			ns := benchNamespace(b)
			tok := waker(b, ns)
			var firstByte []float64
			for i := range b.N {
				name := fmt.Sprintf("w%d", i)
				createSandbox(b, ns, newSandbox(name, "gvisor", v.opts...))
				waitSandboxReady(b, ns, name)
				patchSandbox(b, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
				waitPodGone(b, ns, name)
				time.Sleep(time.Second) // the router's cache sees the suspended Sandbox
				firstByte = append(firstByte, ms(getFirstByte(b, routerURL+"/sandboxes/"+ns+"/"+name+"/healthz", tok)))
			}
			reportPercentiles(b, "first-byte", firstByte)
			b.ReportMetric(0, "ns/op")
		})
	}
}

// waker is a ServiceAccount token that may connect to and wake (patch) the sandboxes of ns.
func waker(b *testing.B, ns string) string {
	cluster := &framework.Env{Config: restConfig}
	tok := cluster.ServiceAccountToken(b, ns, "waker")
	cluster.Grant(b, ns, "waker", "waker", framework.ConnectRule("agents.x-k8s.io", "sandboxes"),
		rbacv1.PolicyRule{APIGroups: []string{"agents.x-k8s.io"}, Resources: []string{"sandboxes"}, Verbs: []string{"patch"}})
	return tok
}

// getFirstByte sends GET url with bearer tok and returns the time to the answer's headers,
// failing unless it is 200.
func getFirstByte(b *testing.B, url, tok string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	t0 := time.Now()
	res, err := http.DefaultClient.Do(req)
	took := time.Since(t0)
	if err != nil {
		b.Fatalf("GET %s: %v", url, err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s of a suspended sandbox: %d; want 200 once it is woken", url, res.StatusCode)
	}
	return took
}
