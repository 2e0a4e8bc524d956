//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/devenv"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
)

// TestPauseWithMemoryIntoNewPod pauses a gVisor Pod with its memory (a full checkpoint that
// stops it), deletes the Pod, and creates a new Pod that the patched shim restores from the
// checkpoint: the new Pod is Running and Ready with its own IP, `kubectl exec` works in it, and
// its Python process still has the secret and counts on from where it stopped.
func TestPauseWithMemoryIntoNewPod(t *testing.T) {
	ns, src, before, dir := snapshotCounter(t, false)
	deletePod(t, ns, src.Name)

	start := time.Now()
	dst := startPodCounter(t, ns, "counter-resumed", checkpoint.ImagePath(dir))
	t.Logf("restored Pod %s Running and Ready in %.3f s, IP %s (the source had %s)", dst.Name, time.Since(start).Seconds(), dst.Status.PodIP, src.Status.PodIP)
	after := execCounter(t, ns, dst.Name, func(s counterState) bool { return s.n > 0 })
	if after.secret != before.secret {
		t.Fatalf("secret in the restored Pod = %d, before the pause %d: the Python process did not keep its memory", after.secret, before.secret)
	}
	if after.n < before.n {
		t.Fatalf("counter in the restored Pod = %d, below %d read before the pause: it started over", after.n, before.n)
	}
	later := execCounter(t, ns, dst.Name, func(s counterState) bool { return s.n > after.n+2 })
	served := httpCounter(t, dst.Status.PodIP)
	if served.secret != before.secret {
		t.Fatalf("http://%s:8080/state (the server listening since before the pause) says secret %d, want %d", dst.Status.PodIP, served.secret, before.secret)
	}
	t.Logf("secret %d kept; counter %d before the pause, %d after the restore, then %d; served on the new IP at %d", before.secret, before.n, after.n, later.n, served.n)
}

// httpCounter reads the counter from the HTTP server the Pod's Python started before any
// checkpoint: it answers on the Pod's own IP only if the restored netstack took the new Pod's
// network.
func httpCounter(t *testing.T, ip string) counterState {
	t.Helper()
	var s counterState
	url := "http://" + net.JoinHostPort(ip, "8080") + "/state"
	waitFor(t, url, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		s = readCounter(string(b))
		return err == nil && resp.StatusCode == http.StatusOK && s.secret != 0, err
	})
	return s
}

// TestForkOfThreeIntoPods snapshots a running gVisor Pod without stopping it and starts three
// new Pods from the snapshot: each has the source's secret, counts on from the snapshot and
// diverges on its own (deleting one stops only that one), and the source keeps running.
func TestForkOfThreeIntoPods(t *testing.T) {
	ns, src, before, dir := snapshotCounter(t, true)

	start := time.Now()
	names := []string{"fork-0", "fork-1", "fork-2"}
	for _, name := range names {
		createPod(t, ns, podCounter(name, checkpoint.ImagePath(dir)))
	}
	ips := map[string]string{src.Status.PodIP: src.Name}
	for _, name := range names {
		p := waitRunning(t, ns, name)
		if other, dup := ips[p.Status.PodIP]; dup {
			t.Fatalf("%s has the IP %s of %s: a fork needs its own network", name, p.Status.PodIP, other)
		}
		ips[p.Status.PodIP] = name
	}
	t.Logf("3 forks Running and Ready %.3f s after they were created", time.Since(start).Seconds())
	first := make([]counterState, len(names))
	for i, name := range names {
		first[i] = execCounter(t, ns, name, func(s counterState) bool { return s.n >= before.n })
		if first[i].secret != before.secret {
			t.Fatalf("%s has secret %d, the source %d", name, first[i].secret, before.secret)
		}
	}
	deletePod(t, ns, names[0])
	for i := 1; i < len(names); i++ {
		execCounter(t, ns, names[i], func(s counterState) bool { return s.n > first[i].n+3 })
	}
	source := execCounter(t, ns, src.Name, func(s counterState) bool { return s.n > before.n+3 })
	if source.secret != before.secret {
		t.Fatalf("the source's secret changed to %d", source.secret)
	}
	t.Logf("secret %d in the source and 3 forked Pods; snapshot at counter >= %d; forks first read at %d, %d, %d; fork-0 deleted, the others and the source (now %d) went on",
		before.secret, before.n, first[0].n, first[1].n, first[2].n, source.n)
}

// servedCounter is counterMain keeping its state in /tmp (the root filesystem) and serving that
// folder over HTTP on port 8080 from a thread started with it.
var servedCounter = strings.Replace(strings.ReplaceAll(counterMain, "/out/", "/tmp/"), "threading.Event().wait()",
	`import functools, http.server
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/tmp")
threading.Thread(target=http.server.ThreadingHTTPServer(("", 8080), handler).serve_forever, daemon=True).start()
threading.Event().wait()`, 1)

// snapshotCounter starts a counter Pod in a new namespace and, once it has counted a little,
// checkpoints it into a snapshot folder of that namespace (leaveRunning: a snapshot that does not
// stop it). It returns the namespace, the Pod, the counter read before the checkpoint and the
// checkpoint directory.
func snapshotCounter(t *testing.T, leaveRunning bool) (string, *corev1.Pod, counterState, string) {
	t.Helper()
	ns := namespace(t)
	src := startPodCounter(t, ns, "counter", "")
	before := execCounter(t, ns, src.Name, func(s counterState) bool { return s.n > 3 })
	dir := snapshotDir(t, ns, "snapshot")
	checkpointPodInto(t, devNode(), ns, src.Name, dir, leaveRunning)
	signAsKuboxNode(t, dir, ns, "snapshot")
	return ns, src, before, dir
}

// signAsKuboxNode signs the manifest of the checkpoint dir, the snapshot ns/name, with the local
// node's manifest key, as kubox-node signs what it writes: the shim restores nothing else.
func signAsKuboxNode(t testing.TB, dir, ns, name string) {
	t.Helper()
	key, err := checkpoint.ReadKeyFile(devenv.NewLayout(stateDir).ManifestKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.Sign(dir, ns, name); err != nil {
		t.Fatal(err)
	}
}

// startPodCounter runs servedCounter in a gVisor Pod (podCounter) and waits until it is Ready.
func startPodCounter(t testing.TB, ns, name, image string) *corev1.Pod {
	t.Helper()
	createPod(t, ns, podCounter(name, image))
	return waitRunning(t, ns, name)
}

// podCounter is a gVisor Pod running servedCounter, keeping its state in the container's root
// filesystem (saved in a checkpoint with the memory); with image set, the Pod is restored from
// that checkpoint image instead of started.
func podCounter(name, image string) *corev1.Pod { return podCounterHolding(name, image, 0) }

// podCounterHolding is podCounter whose Python first fills holdMiB MiB of memory with random bytes.
func podCounterHolding(name, image string, holdMiB int) *corev1.Pod {
	program := servedCounter
	if holdMiB > 0 {
		program = fmt.Sprintf("import os\nblob = bytearray(os.urandom(1 << 20)) * %d\n", holdMiB) + program
	}
	gvisor, grace := "gvisor", int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RuntimeClassName: &gvisor, TerminationGracePeriodSeconds: &grace, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "py", Image: python, ImagePullPolicy: corev1.PullNever,
				Command: []string{"python3", "-c", program},
			}},
		},
	}
	if image != "" {
		pod.Annotations = map[string]string{contract.RestoreImageAnnotation: image}
	}
	return pod
}

// execCounter reads the counter in the Pod through `kubectl exec` until ok accepts it.
func execCounter(t testing.TB, ns, pod string, ok func(counterState) bool) counterState {
	t.Helper()
	var s counterState
	waitFor(t, "the counter in "+ns+"/"+pod, func(ctx context.Context) (bool, error) {
		// stdout only: kubectl notes on stderr which container it picked
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig="+kubeconfig, "exec", "-n", ns, pod, "--", "cat", "/tmp/state").Output()
		if err != nil {
			return false, err
		}
		s = readCounter(string(out))
		return ok(s), nil
	})
	return s
}

// snapshotDir is a checkpoint directory below the node's snapshot folder for namespace ns, where
// the shim accepts images from; the test's cleanup removes it.
func snapshotDir(t testing.TB, ns, name string) string {
	t.Helper()
	parent := filepath.Join(devenv.NewLayout(stateDir).Snapshots, ns)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	return filepath.Join(parent, name)
}

// TestRestoreRefusesForeignOrBrokenSnapshots: the shim restores a Pod only from an image below
// the snapshot folder of the Pod's own namespace, and a Pod whose image is not a checkpoint does
// not start; each says why in the Pod's events, and the Pods are deleted with their namespaces
// (a failed restore must not leave a sandbox containerd cannot delete).
func TestRestoreRefusesForeignOrBrokenSnapshots(t *testing.T) {
	owner, other := namespace(t), namespace(t)
	image := checkpoint.ImagePath(snapshotDir(t, owner, "broken"))
	if err := os.MkdirAll(image, 0o700); err != nil {
		t.Fatal(err)
	}
	garbage := checkpoint.ImagePath(snapshotDir(t, owner, "garbage"))
	if err := os.MkdirAll(garbage, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(garbage, "checkpoint.img"), []byte("not a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	// the same garbage, with a manifest naming busyboxPod's containers, gets as far as runsc
	noManifest := checkpoint.ImagePath(snapshotDir(t, owner, "no-manifest"))
	if err := os.CopyFS(noManifest, os.DirFS(garbage)); err != nil {
		t.Fatal(err)
	}
	manifest := `{"containers": [{"sandbox": true}, {"name": "main"}]}`
	if err := os.WriteFile(filepath.Join(filepath.Dir(garbage), checkpoint.ManifestFile), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	snapshotDir(t, other, "own") // the other namespace has snapshots of its own
	for i, c := range []struct{ ns, image, want string }{
		{other, image, "want exactly"},                                  // another namespace's: refused before anything runs
		{owner, image, "not a kubox checkpoint"},                        // no manifest: same
		{owner, noManifest, "not a kubox checkpoint"},                   // same
		{owner, garbage, "the manifest has no signature of kubox-node"}, // a manifest kubox-node did not sign
	} {
		pod := busyboxPod(fmt.Sprintf("restored-%d", i), "gvisor")
		pod.Annotations = map[string]string{contract.RestoreImageAnnotation: c.image}
		createPod(t, c.ns, pod)
		msg := waitPodEvent(t, c.ns, pod.Name, "FailedCreatePodSandBox")
		if !strings.Contains(msg, c.want) {
			t.Errorf("Pod %s/%s: event %q, want it to contain %q", c.ns, pod.Name, msg, c.want)
		}
		p, err := clientset.CoreV1().Pods(c.ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodPending {
			t.Errorf("Pod %s/%s: phase %s, want Pending: a refused restore must not start the Pod", c.ns, pod.Name, p.Status.Phase)
		}
		t.Logf("%s: %s", c.ns, msg)
	}
}

// waitPodEvent waits for an event with reason about the Pod ns/name and returns its message.
func waitPodEvent(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var msg string
	waitFor(t, reason+" event of "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		evs, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		msg = evs.Items[0].Message
		return true, nil
	})
	return msg
}
