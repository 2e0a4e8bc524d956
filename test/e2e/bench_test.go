//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// BenchmarkPodRunning measures pod created → Running and Ready, per RuntimeClass, and reports
// the median (run with -benchtime 20x for p50 over 20 pods).
func BenchmarkPodRunning(b *testing.B) {
	for _, rc := range []string{"runc", "gvisor"} {
		b.Run(rc, func(b *testing.B) {
			ns := benchNamespace(b)
			measure(b, func(i int) func() {
				name := fmt.Sprintf("p%d", i)
				createPod(b, ns, busyboxPod(name, rc))
				return func() { waitRunning(b, ns, name) }
			})
		})
	}
}

// BenchmarkSandboxReady measures Sandbox created → Ready=True, per RuntimeClass, and under gVisor
// with kubox-agent injected (spec.agent: token Secret, install init container, agent readiness).
func BenchmarkSandboxReady(b *testing.B) {
	requireController(b)
	for _, v := range []struct {
		name, runtimeClass string
		opts               []sandboxOpt
	}{{"runc", "runc", nil}, {"gvisor", "gvisor", nil}, {"gvisor+agent", "gvisor", []sandboxOpt{withAgent}}} {
		b.Run(v.name, func(b *testing.B) {
			ns := benchNamespace(b)
			measure(b, func(i int) func() {
				name := fmt.Sprintf("s%d", i)
				createSandbox(b, ns, newSandbox(name, v.runtimeClass, v.opts...))
				return func() { waitSandboxReady(b, ns, name) }
			})
		})
	}
}

// measure times start(i)'s returned wait for b.N iterations and reports p50 and max in seconds.
func measure(b *testing.B, start func(i int) func()) {
	var took []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		start(i)()
		took = append(took, time.Since(t0).Seconds())
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2], "p50-s")
	b.ReportMetric(took[len(took)-1], "max-s")
	b.ReportMetric(0, "ns/op")
}

func benchNamespace(b *testing.B) string {
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	ctx := context.Background()
	if _, err := clientset.CoreV1().Namespaces().Create(ctx, nsObject(name), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "service account", func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	b.Cleanup(func() { _ = clientset.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

func nsObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// BenchmarkKuboxRun measures what a person and a program wait for from a warm gVisor pool:
// `kubox run --pool python -- python3 -c 'print(1)'` from start to its first byte of output and
// to its exit (claim, wait for Ready, run through kubox-router, release), and the same claim and
// run through the Go SDK in this process. Between runs the pool refills, untimed, so every run
// starts from a full pool. Reports p50 and max in milliseconds (-benchtime 20x: over 20 runs).
func BenchmarkKuboxRun(b *testing.B) {
	requireController(b)
	ns := benchNamespace(b)
	pythonPool(b, ns, 2)
	b.Run("cli", func(b *testing.B) {
		var first, total []float64
		for range b.N {
			waitPoolReady(b, ns, "python", 2)
			t0 := time.Now()
			cmd := kuboxCmd(ns, "run", "--pool", "python", "--", "python3", "-c", "print(1)")
			out := &firstByte{}
			cmd.Stdout = out
			if code := exitCode(b, cmd); code != 0 || out.n == 0 {
				b.Fatalf("kubox run exited %d with %d bytes of output", code, out.n)
			}
			first = append(first, ms(out.at.Sub(t0)))
			total = append(total, ms(time.Since(t0)))
		}
		reportMs(b, "first-output", first)
		reportMs(b, "exit", total)
	})
	b.Run("go-sdk", func(b *testing.B) {
		c, err := kubox.New(restConfig, kubox.Options{Namespace: ns, RouterURL: routerURL})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		var claimed, output []float64
		for range b.N {
			waitPoolReady(b, ns, "python", 2)
			ctx := context.Background()
			t0 := time.Now()
			sb, err := c.Claim(ctx, kubox.FromPool("python"))
			if err != nil {
				b.Fatal(err)
			}
			claimed = append(claimed, ms(time.Since(t0)))
			res, err := sb.Run(ctx, "python3", "-c", "print(1)")
			if err != nil || string(res.Stdout) != "1\n" {
				b.Fatalf("Run = %+v, %v", res, err)
			}
			output = append(output, ms(time.Since(t0)))
			if err := sb.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}
		reportMs(b, "claim-ready", claimed)
		reportMs(b, "first-output", output)
	})
	b.Run("python-sdk", func(b *testing.B) { benchPythonSDK(b, ns) })
	b.Run("typescript-sdk", func(b *testing.B) { benchTypeScriptSDK(b, ns) })
	b.Run("e2b-sdk", func(b *testing.B) { benchE2BSDK(b, ns) })
}

// benchPythonSDK measures Sandbox.claim + sb.run of the Python SDK, the same as go-sdk: one
// long-lived Python process (sdk/python/bench/first_output.py, its start and imports not
// counted) measures one claim per line it reads, once the pool is full again.
func benchPythonSDK(b *testing.B, ns string) {
	testutil.RequirePytest(b)
	cmd := exec.Command(testutil.Python, "sdk/python/bench/first_output.py", "--pool", "python", "--namespace", ns)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoDir, "sdk", "python", "src"))
	benchLines(b, ns, cmd, "claimed_ms", "claim-ready")
}

// benchTypeScriptSDK is benchPythonSDK for the TypeScript SDK (its dist/bench/first_output.js,
// built by `make ts-build`).
func benchTypeScriptSDK(b *testing.B, ns string) {
	cmd := exec.Command("node", "sdk/typescript/dist/bench/first_output.js", "--pool", "python", "--namespace", ns)
	benchLines(b, ns, cmd, "claimed_ms", "claim-ready")
}

// benchE2BSDK measures Sandbox.create() + commands.run() of E2B's stock SDK through the local
// router's E2B API (test/e2b/first_output.mjs; the environment of TestE2BSDKConformance).
func benchE2BSDK(b *testing.B, ns string) {
	requireE2BDeps(b)
	cmd := exec.Command("node", "--import", "./resolve.mjs", "first_output.mjs")
	cmd.Dir = filepath.Join(repoDir, e2bDir)
	cmd.Env = append(os.Environ(), e2bEnv(b, ns)...)
	benchLines(b, ns, cmd, "created_ms", "create")
}

// benchLines drives a long-lived measuring process: for each of b.N runs it waits for the pool
// to be full, writes a line to the process and reads back a JSON line with the milliseconds to
// the sandbox (field first, reported as what) and to the first output (output_ms).
func benchLines(b *testing.B, ns string, cmd *exec.Cmd, first, what string) {
	if cmd.Dir == "" {
		cmd.Dir = repoDir
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = in.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("%s: %v", cmd, err)
		}
	}()
	lines := bufio.NewScanner(out)
	var ready, output []float64
	for range b.N {
		waitPoolReady(b, ns, "python", 2)
		if _, err := io.WriteString(in, "go\n"); err != nil {
			b.Fatal(err)
		}
		if !lines.Scan() {
			b.Fatalf("%s ended early: %v", cmd, lines.Err())
		}
		var m map[string]float64
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			b.Fatalf("%s printed %q: %v", cmd, lines.Text(), err)
		}
		ready, output = append(ready, m[first]), append(output, m["output_ms"])
	}
	reportMs(b, what, ready)
	reportMs(b, "first-output", output)
}

// firstByte records when the first byte was written to it.
type firstByte struct {
	at time.Time
	n  int
}

func (f *firstByte) Write(p []byte) (int, error) {
	if f.n == 0 && len(p) > 0 {
		f.at = time.Now()
	}
	f.n += len(p)
	return len(p), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reportMs reports the p50 and max of a sample of milliseconds as <what>-p50-ms and -max-ms.
func reportMs(b *testing.B, what string, sample []float64) {
	slices.Sort(sample)
	b.ReportMetric(sample[len(sample)/2], what+"-p50-ms")
	b.ReportMetric(sample[len(sample)-1], what+"-max-ms")
	b.ReportMetric(0, "ns/op")
}
