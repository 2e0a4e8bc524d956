//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// TestFilesystemSnapshotStartsAfreshOnItsFiles takes a Filesystem SandboxSnapshot of a running
// sandbox through the Go SDK and forks it: the fork runs its Pod afresh (the agent's init container
// again, a new Python with its own secret) on the files the source had written, which the fork
// has and the source keeps.
func TestFilesystemSnapshotStartsAfreshOnItsFiles(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	c := sdkClient(t, ns)
	src, before := countingSource(t, c, ns, "source")
	word := rand.Text()
	if _, err := src.Run(t.Context(), "sh", "-c", "mkdir -p /var/kept && echo "+word+" > /var/kept/word"); err != nil {
		t.Fatalf("writing /var/kept/word in the source: %v", err)
	}
	snap, err := src.Snapshot(t.Context(), kubox.FilesystemOnly())
	if err != nil {
		t.Fatalf("Snapshot(FilesystemOnly): %v", err)
	}
	st := snap.Status.Snapshot
	if snap.Spec.Type != extv1beta1.SnapshotTypeFilesystem || st.SHA256 == "" || st.SizeBytes == 0 {
		t.Fatalf("SandboxSnapshot %s: type %q, status %+v; want a Filesystem snapshot with its size and checksum", snap.Name, snap.Spec.Type, st)
	}
	start := time.Now()
	forks, err := c.ForkFrom(t.Context(), snap, 1)
	if err != nil {
		t.Fatalf("ForkFrom a filesystem snapshot: %v", err)
	}
	took := time.Since(start)
	fork := forks[0]
	pod, err := clientset.CoreV1().Pods(ns).Get(t.Context(), fork.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.InitContainers) == 0 || !initContainersRan(pod) {
		t.Errorf("fork Pod %s: init containers %v, statuses %v; want kubox-agent's install run again", pod.Name, pod.Spec.InitContainers, pod.Status.InitContainerStatuses)
	}
	res, err := fork.Run(t.Context(), "cat", "/var/kept/word")
	if err != nil || strings.TrimSpace(string(res.Stdout)) != word {
		t.Fatalf("the fork reads /var/kept/word = %q, %v; want %q, the source's file", res.Stdout, err, word)
	}
	ip, tok := agentEndpoint(t, ns, fork.Name())
	fresh := agentCounter(t, ip, tok, func(s counterState) bool { return s.secret != 0 && s.secret != before.secret })
	t.Logf("filesystem snapshot %s: %.2f MiB, taken in %s; fork %s Ready %s after it was asked for, counting afresh (secret %d, source %d)",
		snap.Name, float64(st.SizeBytes)/(1<<20), st.Duration.Duration, fork.Name(), took.Round(10*time.Millisecond), fresh.secret, before.secret)
	if res, err := src.Run(t.Context(), "cat", "/var/kept/word"); err != nil || strings.TrimSpace(string(res.Stdout)) != word {
		t.Errorf("the source after the snapshot reads %q, %v; want it still running with its file", res.Stdout, err)
	}
	if err := fork.Delete(t.Context()); err != nil {
		t.Errorf("Delete(%s): %v", fork.Name(), err)
	}
}

func initContainersRan(pod *corev1.Pod) bool {
	for _, s := range pod.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return len(pod.Status.InitContainerStatuses) > 0
}

// stoppableCounter is servedCounter whose Python exits (status 3) once /tmp/stop exists.
var stoppableCounter = strings.Replace(servedCounter, "threading.Event().wait()", `import os
while not os.path.exists("/tmp/stop"):
    time.sleep(0.2)
raise SystemExit(3)`, 1)

func withStoppableCounter(spec map[string]any) {
	withCounter(spec)
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	podSpec["containers"].([]any)[0].(map[string]any)["command"] = []any{"python3", "-c", stoppableCounter}
}

// TestRestoredContainerRestartsAfresh: the container of a fork (restored from a full snapshot)
// that exits is restarted by the kubelet like any Pod's: afresh, in the running sandbox, on a new
// root filesystem — not restored again, which gVisor cannot do into a running sandbox.
func TestRestoredContainerRestartsAfresh(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	c := sdkClient(t, ns)
	createSandbox(t, ns, newSandbox("source", "gvisor", withStoppableCounter))
	waitSandboxReady(t, ns, "source")
	before := execCounter(t, ns, "source", func(s counterState) bool { return s.n > 3 })
	src, err := c.Open(t.Context(), ns, "source")
	if err != nil {
		t.Fatal(err)
	}
	forks, err := src.Fork(t.Context(), 1)
	if err != nil {
		t.Fatalf("Fork(1): %v", err)
	}
	fork := forks[0].Name()
	restored := execCounter(t, ns, fork, func(s counterState) bool { return s.n > 0 })
	if restored.secret != before.secret {
		t.Fatalf("fork %s: secret %d; want the source's %d (restored)", fork, restored.secret, before.secret)
	}
	kubectlExec(t, ns, fork, "touch", "/tmp/stop")
	var restarts int32
	waitFor(t, "the fork's container restarted and Ready", func(ctx context.Context) (bool, error) {
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, fork, metav1.GetOptions{})
		if err != nil || len(pod.Status.ContainerStatuses) == 0 {
			return false, err
		}
		cs := pod.Status.ContainerStatuses[0]
		restarts = cs.RestartCount
		return cs.RestartCount > 0 && cs.Ready, nil
	})
	fresh := execCounter(t, ns, fork, func(s counterState) bool { return s.secret != 0 && s.secret != before.secret })
	waitSandboxReady(t, ns, fork)
	t.Logf("fork %s restarted %d time(s): counting afresh with secret %d at %d (restored secret %d)", fork, restarts, fresh.secret, fresh.n, before.secret)
	if err := forks[0].Delete(t.Context()); err != nil {
		t.Errorf("Delete(%s): %v", fork, err)
	}
}
