//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// BenchmarkSandboxForkOfTen forks a running gVisor Sandbox (Python counting under kubox-agent)
// ten times through the Go SDK: from calling Fork until all ten forks are Ready and each has
// answered, through its agent and with its own token, with the source's secret. Also reports the
// snapshot's pause. Each round's forks are deleted, untimed, before the next.
func BenchmarkSandboxForkOfTen(b *testing.B) {
	requireController(b)
	ns := benchNamespace(b)
	c := sdkClient(b, ns)
	src, first := countingSource(b, c, ns, "source")
	var all, pause []float64
	for range b.N {
		start := time.Now()
		forks, err := src.Fork(context.Background(), 10)
		if err != nil {
			b.Fatalf("Fork(10): %v", err)
		}
		for _, f := range forks {
			ip, tok := agentEndpoint(b, ns, f.Name())
			if got := agentCounter(b, ip, tok, func(s counterState) bool { return s.n > 0 }); got.secret != first.secret {
				b.Fatalf("fork %s: secret %d, the source's %d", f.Name(), got.secret, first.secret)
			}
		}
		all = append(all, ms(time.Since(start)))
		snaps, err := dyn.Resource(snapshots).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range snaps.Items {
			if d, _, _ := unstructured.NestedString(s.Object, "status", "snapshot", "duration"); d != "" {
				if pd, err := time.ParseDuration(d); err == nil {
					pause = append(pause, ms(pd))
				}
			}
			_ = dyn.Resource(snapshots).Namespace(ns).Delete(context.Background(), s.GetName(), metav1.DeleteOptions{})
		}
		for _, f := range forks {
			if err := f.Delete(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		for _, f := range forks {
			waitPodGone(b, ns, f.Name())
		}
	}
	reportMs(b, "all-10-answer", all)
	reportMs(b, "snapshot-pause", pause)
}

// modelProgram stands for a sandbox that must load something before it can answer (a model, an
// imported numpy): it builds and hashes 256 MiB, then serves the digest and how long the load took
// on port 8080.
const modelProgram = `import hashlib, http.server, time
t0 = time.time()
weights = bytearray(256 << 20)
for i in range(0, len(weights), 4096):
    weights[i] = i % 251
digest = hashlib.sha256(weights).hexdigest()[:16]
loaded = time.time() - t0
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = f"{digest} {loaded:.2f}\n".encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", 8080), Answer).serve_forever()
`

// withModel makes the Sandbox's container modelProgram, Ready once it answers (so a warm pool's
// member is Ready once loaded, as a template for such a program would say).
func withModel(spec map[string]any) {
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	c := podSpec["containers"].([]any)[0].(map[string]any)
	c["image"] = python
	c["command"] = []any{"python3", "-c", modelProgram}
	c["readinessProbe"] = map[string]any{"httpGet": map[string]any{"path": "/", "port": int64(8080)}, "periodSeconds": int64(1)}
}

// BenchmarkClaimToFirstOutput measures, for a sandbox that must load 256 MiB before it answers
// (modelProgram), the time from a Go SDK claim to the first answer of its loaded Python, three
// ways: started cold from the template, taken from a plain warm pool (whose member loaded it when
// it started), and taken from a pool whose template names a snapshot of a loaded sandbox (its
// members restore the loaded process). For the pools it also reports the refill: from releasing
// the claim until the pool is full again, what the next claim would otherwise wait for.
func BenchmarkClaimToFirstOutput(b *testing.B) {
	requireController(b)
	ns := benchNamespace(b)
	c := sdkClient(b, ns)
	spec := func() map[string]any {
		return newSandbox("x", "gvisor", withModel, withAgent).Object["spec"].(map[string]any)
	}
	createTemplateWith(b, ns, "model", spec())

	// The pools are made outside b.Run, whose function runs once with b.N = 1 before the
	// measured run.
	createPool(b, ns, "model", "model")
	src, err := c.Claim(context.Background(), kubox.FromTemplate("model"))
	if err != nil {
		b.Fatal(err)
	}
	want := answer(b, src)
	snap, err := src.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	_ = src.Close(context.Background())
	b.Logf("snapshot %s of a loaded sandbox (%s): %.0f MiB, paused %s", snap.Name, want,
		float64(snap.Status.Snapshot.SizeBytes)/(1<<20), snap.Status.Snapshot.Duration.Duration)
	restored := spec()
	restored["snapshotRef"] = map[string]any{"name": snap.Name}
	createTemplateWith(b, ns, "model-snapshot", restored)
	createPool(b, ns, "model-snapshot", "model-snapshot")

	b.Run("cold", func(b *testing.B) { claimToAnswer(b, c, kubox.FromTemplate("model"), ns, "") })
	b.Run("warm-pool", func(b *testing.B) { claimToAnswer(b, c, kubox.FromPool("model"), ns, "model") })
	b.Run("snapshot-pool", func(b *testing.B) {
		claimToAnswer(b, c, kubox.FromPool("model-snapshot"), ns, "model-snapshot")
	})
}

// createPool creates a one-member pool of template.
func createPool(b testing.TB, ns, name, template string) {
	b.Helper()
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicas": int64(1), "sandboxTemplateRef": map[string]any{"name": template}}}}
	if _, err := dyn.Resource(pools).Namespace(ns).Create(context.Background(), pool, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// claimToAnswer claims b.N times from src, each time from a full pool when pool names src's pool,
// timing the claim and its first answer, and the pool's refill after the release.
func claimToAnswer(b *testing.B, c *kubox.Client, src kubox.ClaimSource, ns, pool string) {
	var first, refill []float64
	for range b.N {
		if pool != "" {
			waitMemberReady(b, ns, pool)
		}
		start := time.Now()
		sb, err := c.Claim(context.Background(), src)
		if err != nil {
			b.Fatal(err)
		}
		got := answer(b, sb)
		first = append(first, ms(time.Since(start)))
		if pool != "" && !isMember(sb.Name(), pool) {
			b.Fatalf("claim from pool %s got sandbox %s: not a member (started cold)", pool, sb.Name())
		}
		b.Logf("%s: %s answered %q", src, sb.Name(), got)
		released := time.Now()
		if err := sb.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		if pool != "" {
			waitMemberReady(b, ns, pool)
			refill = append(refill, ms(time.Since(released)))
		}
	}
	reportMs(b, "first-output", first)
	if len(refill) > 0 {
		reportMs(b, "refill", refill)
	}
}

// waitMemberReady waits until pool has an unclaimed member that is Ready, read from the members
// themselves (the pool's status can lag a claim that just took one).
func waitMemberReady(b *testing.B, ns, pool string) {
	b.Helper()
	waitFor(b, "a Ready member of pool "+pool, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(sandboxes).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "agents.x-k8s.io/warm-pool-sandbox"})
		if err != nil {
			return false, err
		}
		for _, sb := range list.Items {
			if isMember(sb.GetName(), pool) && sb.GetDeletionTimestamp() == nil && readyOf(&sb) == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// isMember reports whether name is a member name of pool: the pool's name and five characters.
func isMember(name, pool string) bool {
	return strings.HasPrefix(name, pool+"-") && len(name) == len(pool)+6
}

// readyOf is the status of a Sandbox's Ready condition, "" without one.
func readyOf(sb *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(sb.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// answer asks the sandbox's Python on port 8080 every 20 ms until it answers, and returns the
// answer.
func answer(b testing.TB, sb *kubox.Sandbox) string {
	b.Helper()
	url := "http://" + sb.Object().Status.PodIPs[0] + ":8080/"
	client := &http.Client{Timeout: 5 * time.Second}
	for deadline := time.Now().Add(waitTimeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := client.Get(url)
		if err != nil {
			continue
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err == nil && res.StatusCode == http.StatusOK {
			return strings.TrimSpace(string(body))
		}
	}
	b.Fatalf("the loaded Python in %s did not answer at %s within %s", sb.Name(), url, waitTimeout)
	return ""
}
