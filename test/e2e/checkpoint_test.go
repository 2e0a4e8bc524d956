//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubox-dev/kubox/internal/devenv"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// counterMain keeps a random secret in a Python variable and counts in the background, writing
// both to /out/state (an emptyDir, so the host can read it) five times a second: only the
// process's memory knows the secret.
const counterMain = `import random, threading, time
secret = random.randrange(10**12)
n = 0
def count():
    global n
    while True:
        n += 1
        with open("/out/state.new", "w") as f:
            f.write(f"{secret} {n}\n")
        import os; os.replace("/out/state.new", "/out/state")
        time.sleep(0.2)
threading.Thread(target=count, daemon=True).start()
threading.Event().wait()`

// devNode is the local node's layout as the checkpoint package sees it.
func devNode() checkpoint.Node {
	l := devenv.NewLayout(stateDir)
	return checkpoint.Node{
		Runsc: filepath.Join(l.Bin, "runsc"), Ctr: filepath.Join(l.Bin, "ctr"), ContainerdSocket: l.ContainerdSocket,
		ContainerdRoot: l.ContainerdRoot, ContainerdState: l.ContainerdState, ShimRunscRoot: l.RunscRoot,
		KubeletRoot: l.KubeletRoot,
	}
}

// TestCheckpointRestoreKeepsPythonMemory pauses a gVisor Pod's sandbox with memory (a full
// checkpoint that stops it), deletes the Pod, restores the checkpoint into a new sandbox and
// checks that the Python process there still has its secret and that its counter continues from
// where it stopped.
func TestCheckpointRestoreKeepsPythonMemory(t *testing.T) {
	ns := namespace(t)
	node := devNode()
	pod, podState := startCounter(t, ns)
	before := waitCounter(t, podState, func(s counterState) bool { return s.n > 3 })
	dir := checkpointPod(t, node, ns, pod.Name, false)
	deletePod(t, ns, pod.Name)

	restored, _ := restore(t, node, dir)
	state := restoredState(t, restored)
	after := waitCounter(t, state, func(s counterState) bool { return s.n > 0 })
	if after.secret != before.secret {
		t.Fatalf("secret after restore = %d, before the checkpoint %d: the Python process did not keep its memory", after.secret, before.secret)
	}
	if after.n < before.n {
		t.Fatalf("counter after restore = %d, below %d read before the checkpoint: it started over", after.n, before.n)
	}
	later := waitCounter(t, state, func(s counterState) bool { return s.n > after.n+2 })
	if later.secret != before.secret {
		t.Fatalf("secret changed while the restored process ran: %d, want %d", later.secret, before.secret)
	}
	t.Logf("secret %d kept; counter %d before the checkpoint, %d after the restore, then %d", before.secret, before.n, after.n, later.n)
}

// TestCheckpointForkOfThree snapshots a running gVisor Pod (the checkpoint leaves it running) and
// restores the snapshot three times: each copy has the source's secret, counts on from the
// snapshot, and runs on its own (one killed, the others and the source go on).
func TestCheckpointForkOfThree(t *testing.T) {
	ns := namespace(t)
	node := devNode()
	pod, podState := startCounter(t, ns)
	before := waitCounter(t, podState, func(s counterState) bool { return s.n > 3 })
	dir := checkpointPod(t, node, ns, pod.Name, true)
	source := waitCounter(t, podState, func(s counterState) bool { return s.n > before.n+3 })

	var forks []*checkpoint.Restored
	var runscs []checkpoint.Runsc
	var states []string
	for range 3 {
		r, runsc := restore(t, node, dir)
		forks, runscs, states = append(forks, r), append(runscs, runsc), append(states, restoredState(t, r))
	}
	last := make([]counterState, len(forks))
	for i, st := range states {
		last[i] = waitCounter(t, st, func(s counterState) bool { return s.n > before.n })
		if last[i].secret != before.secret {
			t.Fatalf("fork %d has secret %d, the source %d", i, last[i].secret, before.secret)
		}
	}
	if err := runscs[0].Kill(context.Background(), forks[0].IDs...); err != nil {
		t.Fatalf("kill fork 0: %v", err)
	}
	stopped := waitCounter(t, states[0], func(counterState) bool { return true })
	for i := 1; i < len(states); i++ {
		waitCounter(t, states[i], func(s counterState) bool { return s.n > last[i].n+3 })
	}
	waitCounter(t, podState, func(s counterState) bool { return s.n > source.n+3 })
	time.Sleep(time.Second)
	if now := waitCounter(t, states[0], func(counterState) bool { return true }); now.n != stopped.n {
		t.Errorf("fork 0 counted on (%d -> %d) after it was killed", stopped.n, now.n)
	}
	t.Logf("secret %d in the source and 3 forks; snapshot at counter >= %d; forks at %d, %d, %d; fork 0 stopped at %d, the others and the source went on",
		before.secret, before.n, last[0].n, last[1].n, last[2].n, stopped.n)
}

// startCounter runs counterMain in a gVisor Pod and returns it and the host path of its state file.
func startCounter(t *testing.T, ns string) (*corev1.Pod, string) {
	t.Helper()
	gvisor, grace := "gvisor", int64(1)
	pod := createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "counter"},
		Spec: corev1.PodSpec{
			RuntimeClassName: &gvisor, TerminationGracePeriodSeconds: &grace, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "py", Image: python, ImagePullPolicy: corev1.PullNever,
				Command:      []string{"python3", "-c", counterMain},
				VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}},
			}},
			Volumes: []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	})
	pod = waitRunning(t, ns, pod.Name)
	return pod, filepath.Join(devNode().KubeletRoot, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "out", "state")
}

// checkpointPod takes a full checkpoint of the Pod ns/name into a test folder and returns it.
func checkpointPod(t *testing.T, node checkpoint.Node, ns, name string, leaveRunning bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ck")
	checkpointPodInto(t, node, ns, name, dir, leaveRunning)
	return dir
}

// checkpointPodInto takes a full checkpoint of the Pod ns/name into dir and returns its manifest.
func checkpointPodInto(t testing.TB, node checkpoint.Node, ns, name, dir string, leaveRunning bool) *checkpoint.Manifest {
	t.Helper()
	sandboxID, err := checkpoint.FindSandbox(node.TaskDir(), ns, name, "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkpoint.Checkpoint(context.Background(), node.PodRunsc(), checkpoint.Options{
		SandboxID: sandboxID, Dir: dir, TaskDir: node.TaskDir(), PodDirs: node.PodDirs(), LeaveRunning: leaveRunning,
	})
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	t.Logf("checkpoint of %s (leave running %t): %d bytes in %.3f s, sha256 %s, %d containers", sandboxID[:12], leaveRunning,
		m.Size, time.Duration(m.Duration).Seconds(), m.SHA256, len(m.Containers))
	return m
}

// restoredState is the host path of the restored counter's state file: the restore's own copy of
// the Pod's emptyDir.
func restoredState(t *testing.T, r *checkpoint.Restored) string {
	t.Helper()
	copies, _ := filepath.Glob(filepath.Join(r.Bundles[r.Containers["py"]], "files", "*", "state"))
	if len(copies) != 1 {
		t.Fatalf("the restored bundle has %d copies of the emptyDir's state file, want 1", len(copies))
	}
	return copies[0]
}

type counterState struct{ secret, n int64 }

func readCounter(s string) counterState {
	var c counterState
	f := strings.Fields(s)
	if len(f) == 2 {
		c.secret, _ = strconv.ParseInt(f[0], 10, 64)
		c.n, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return c
}

// restore restores the checkpoint in dir into a new sandbox with its own runsc root and root
// filesystems mounted from containerd's images; the test's cleanup removes all of it.
func restore(t *testing.T, node checkpoint.Node, dir string) (*checkpoint.Restored, checkpoint.Runsc) {
	t.Helper()
	ctx := context.Background()
	// A short folder: runsc puts unix sockets in its root.
	root, err := os.MkdirTemp("/tmp", "kbxck")
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(root, "logs") + "/"
	runsc := checkpoint.Runsc{Binary: node.Runsc, Root: filepath.Join(root, "r"), Flags: []string{"--debug", "--debug-log=" + logs}}
	work := filepath.Join(root, "b")
	for _, d := range []string{work, runsc.Root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	images := node.Images()
	var mounted []string
	t.Cleanup(func() {
		for _, m := range mounted {
			if err := images.Unmount(ctx, m); err != nil {
				t.Errorf("unmount %s: %v", m, err)
			}
		}
		_ = exec.Command("umount", filepath.Join(runsc.Root, "null-netns")).Run()
		_ = os.RemoveAll(root)
	})
	start := time.Now()
	restored, err := checkpoint.Restore(ctx, runsc, checkpoint.RestoreOptions{
		Dir: dir, ID: "kbx-" + rand.String(6), WorkDir: work,
		RootFS: func(ctx context.Context, c checkpoint.Container, target string) error {
			if err := images.Mount(ctx, c, target); err != nil {
				return err
			}
			mounted = append(mounted, target)
			return nil
		},
	})
	if err != nil {
		logTails(t, logs)
		t.Fatalf("restore: %v", err)
	}
	t.Logf("restore into %s: %.3f s", restored.IDs[0], time.Since(start).Seconds())
	t.Cleanup(func() {
		if err := runsc.Kill(ctx, restored.IDs...); err != nil {
			t.Logf("remove the restored sandbox: %v", err)
		}
	})
	return restored, runsc
}

// waitCounter reads the counter's state file until ok accepts what it says.
func waitCounter(t *testing.T, path string, ok func(counterState) bool) counterState {
	t.Helper()
	var s counterState
	waitFor(t, "the counter in "+path, func(context.Context) (bool, error) {
		b, err := os.ReadFile(path)
		s = readCounter(string(b))
		return err == nil && ok(s), err
	})
	return s
}

// logTails logs the end of each runsc debug log in dir, to say why a restore failed.
func logTails(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var cg []string
		for _, l := range lines {
			if strings.Contains(l, "cgroup") {
				cg = append(cg, l)
			}
		}
		t.Logf("%s:\n%s\n%s", filepath.Base(f), strings.Join(cg, "\n"), strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}
