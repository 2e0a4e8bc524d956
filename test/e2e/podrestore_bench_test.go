//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// BenchmarkPauseResumeWithMemory pauses a gVisor Pod with its memory and resumes it in a new Pod,
// over and over, the resumed Pod being the next one paused: pause is the checkpoint that stops the
// sandbox, written and verified; resume is from creating the new Pod to the first answer of
// `kubectl exec` in it, with the Python's secret checked each time. "idle" is a Python counting
// in the background, "500MiB" the same Python holding 500 MiB of random bytes. Reports p50, p99
// and max of each in ms, the snapshot's size, and the first Pod's cold start measured the same
// way as a resume (created → first answer, its Python started from nothing) for comparison
// (-benchtime 10x: over 10 cycles).
func BenchmarkPauseResumeWithMemory(b *testing.B) {
	for _, v := range []struct {
		name string
		hold int
	}{{"idle", 0}, {"500MiB", 500}} {
		b.Run(v.name, func(b *testing.B) {
			ns := benchNamespace(b)
			node := devNode()
			cold := time.Now()
			createPod(b, ns, podCounterHolding("c0", "", v.hold))
			first := execCounter(b, ns, "c0", func(s counterState) bool { return s.n > 0 })
			b.ReportMetric(ms(time.Since(cold)), "cold-start-ms")
			var pause, resume []float64
			var size int64
			var prev string
			for i := range b.N {
				from, to := fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i+1)
				dir := snapshotDir(b, ns, from)
				m := checkpointPodInto(b, node, ns, from, dir, false)
				pause, size = append(pause, ms(time.Duration(m.Duration))), m.Size
				deletePod(b, ns, from)
				// the snapshot the deleted Pod was restored from is no longer read
				if err := os.RemoveAll(prev); err != nil {
					b.Fatal(err)
				}
				prev = dir
				start := time.Now()
				createPod(b, ns, podCounterHolding(to, checkpoint.ImagePath(dir), v.hold))
				got := execCounter(b, ns, to, func(s counterState) bool { return s.n > 0 })
				resume = append(resume, ms(time.Since(start)))
				if got.secret != first.secret {
					b.Fatalf("cycle %d: secret %d after the resume, %d at the start", i, got.secret, first.secret)
				}
			}
			reportPauseResume(b, pause, resume, size)
		})
	}
}

// BenchmarkForkOfTen snapshots a running gVisor Pod without stopping it and starts 10 Pods from
// the snapshot at once: the time from the snapshot's start until all 10 answer `kubectl exec`
// with the source's secret, and the snapshot's own duration. Each round's forks are deleted
// before the next. Reports the mean over -benchtime rounds.
func BenchmarkForkOfTen(b *testing.B) {
	ns := benchNamespace(b)
	node := devNode()
	src := startPodCounter(b, ns, "src", "")
	first := execCounter(b, ns, src.Name, func(s counterState) bool { return s.n > 0 })
	var all, snap float64
	for i := range b.N {
		start := time.Now()
		dir := snapshotDir(b, ns, fmt.Sprintf("s%d", i))
		m := checkpointPodInto(b, node, ns, src.Name, dir, true)
		names := make([]string, 10)
		for j := range names {
			names[j] = fmt.Sprintf("f%d-%d", i, j)
			createPod(b, ns, podCounter(names[j], checkpoint.ImagePath(dir)))
		}
		for _, name := range names {
			if got := execCounter(b, ns, name, func(s counterState) bool { return s.n > 0 }); got.secret != first.secret {
				b.Fatalf("fork %s: secret %d, the source's %d", name, got.secret, first.secret)
			}
		}
		all += ms(time.Since(start))
		snap += ms(time.Duration(m.Duration))
		// untimed: each round forks onto a node running only the source
		for _, name := range names {
			if err := clientset.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		for _, name := range names {
			waitPodGone(b, ns, name)
		}
	}
	b.ReportMetric(all/float64(b.N), "all-10-answer-ms")
	b.ReportMetric(snap/float64(b.N), "snapshot-ms")
	b.ReportMetric(0, "ns/op")
}

// reportPercentiles reports p50, p99 and max of samples (ms) as name-p50-ms and so on.
func reportPercentiles(b *testing.B, name string, samples []float64) {
	slices.Sort(samples)
	b.ReportMetric(samples[len(samples)/2], name+"-p50-ms")
	b.ReportMetric(samples[int(math.Ceil(0.99*float64(len(samples))))-1], name+"-p99-ms")
	b.ReportMetric(samples[len(samples)-1], name+"-max-ms")
}

// BenchmarkSandboxPauseResume is BenchmarkPauseResumeWithMemory's "idle" on a kubox Sandbox with
// kubox-agent (withCounter, withAgent): the Sandbox is suspended after the first checkpoint, and
// each resume is a Pod shaped by checkpoint.RestoredPod, timed from its creation to the first
// process the restored agent runs for a caller with the Sandbox's token (cold start: from the
// Sandbox's creation to the same answer).
func BenchmarkSandboxPauseResume(b *testing.B) {
	requireController(b)
	ns, name := benchNamespace(b), "bench"
	cold := time.Now()
	createSandbox(b, ns, newSandbox(name, "gvisor", withCounter, withAgent))
	waitSandboxReady(b, ns, name)
	ip, tok := agentEndpoint(b, ns, name)
	first := agentCounter(b, ip, tok, func(s counterState) bool { return s.n > 0 })
	b.ReportMetric(ms(time.Since(cold)), "cold-start-ms")
	src, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var pause, resume []float64
	var size int64
	var prev string
	for i := range b.N {
		from, to := fmt.Sprintf("%s-r%d", name, i), fmt.Sprintf("%s-r%d", name, i+1)
		if i == 0 {
			from = name
		}
		dir := snapshotDir(b, ns, from)
		m := checkpointPodInto(b, devNode(), ns, from, dir, false)
		pause, size = append(pause, ms(time.Duration(m.Duration))), m.Size
		if i == 0 {
			patchSandbox(b, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
			waitPodGone(b, ns, name)
		} else {
			deletePod(b, ns, from)
		}
		if err := os.RemoveAll(prev); err != nil {
			b.Fatal(err)
		}
		prev = dir
		start := time.Now()
		createPod(b, ns, checkpoint.RestoredPod(src, to, src.Spec.NodeName, dir))
		p := waitRunning(b, ns, to)
		got := agentCounter(b, p.Status.PodIP, tok, func(s counterState) bool { return s.n > 0 })
		resume = append(resume, ms(time.Since(start)))
		if got.secret != first.secret {
			b.Fatalf("cycle %d: secret %d after the resume, %d at the start", i, got.secret, first.secret)
		}
	}
	reportPauseResume(b, pause, resume, size)
}

// reportPauseResume reports the pause and resume percentiles and the last snapshot's size.
func reportPauseResume(b *testing.B, pause, resume []float64, size int64) {
	reportPercentiles(b, "pause", pause)
	reportPercentiles(b, "resume", resume)
	b.ReportMetric(float64(size)/(1<<20), "snapshot-MiB")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSuspendResumeKeepingMemory is the user's view of BenchmarkSandboxPauseResume: a
// Sandbox with suspendPolicy.keepMemory suspended and resumed through its spec, as `kubox suspend
// --keep-memory` and `kubox resume` do. Suspend is from the patch until the Pod is gone with the
// snapshot recorded (checkpoint-ms is the checkpoint itself, from status.memory.duration);
// resume from the patch until the restored agent runs a process for the Sandbox's token.
func BenchmarkSuspendResumeKeepingMemory(b *testing.B) {
	requireController(b)
	ns, name := benchNamespace(b), "kept"
	createSandbox(b, ns, newSandbox(name, "gvisor", withCounter, withAgent, withKeepMemory))
	waitSandboxReady(b, ns, name)
	ip, tok := agentEndpoint(b, ns, name)
	first := agentCounter(b, ip, tok, func(s counterState) bool { return s.n > 0 })
	var suspend, resume, ckpt []float64
	var size int64
	for i := range b.N {
		start := time.Now()
		patchSandbox(b, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
		waitPodGone(b, ns, name)
		var m map[string]any
		waitFor(b, "status.memory of a new snapshot", func(ctx context.Context) (bool, error) {
			sb, err := dyn.Resource(sandboxes).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			m, _, _ = unstructured.NestedMap(sb.Object, "status", "memory")
			return m != nil, nil
		})
		suspend = append(suspend, ms(time.Since(start)))
		d, _ := time.ParseDuration(fmt.Sprint(m["duration"]))
		ckpt, size = append(ckpt, ms(d)), m["sizeBytes"].(int64)

		start = time.Now()
		patchSandbox(b, ns, name, `{"spec":{"operatingMode":"Running"}}`)
		waitSandboxReady(b, ns, name)
		ip, _ = agentEndpoint(b, ns, name)
		got := agentCounter(b, ip, tok, func(s counterState) bool { return s.n > 0 })
		resume = append(resume, ms(time.Since(start)))
		if got.secret != first.secret {
			b.Fatalf("cycle %d: secret %d after the resume, %d at the start", i, got.secret, first.secret)
		}
	}
	reportPercentiles(b, "checkpoint", ckpt)
	reportPercentiles(b, "suspend", suspend)
	reportPercentiles(b, "resume", resume)
	b.ReportMetric(float64(size)/(1<<20), "snapshot-MiB")
	b.ReportMetric(0, "ns/op")
}
