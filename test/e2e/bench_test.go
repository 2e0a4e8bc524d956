//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
