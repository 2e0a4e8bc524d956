//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	sandboxctl "github.com/kubox-dev/kubox/internal/controller/sandbox"
	"github.com/kubox-dev/kubox/internal/devenv"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/nodetls"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
	"github.com/kubox-dev/kubox/proto/kubox/node/v1/nodev1connect"
)

// withCounter makes the Sandbox's container the Python counter that keeps a random secret and
// counts into /tmp/state (servedCounter).
func withCounter(spec map[string]any) {
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	c := podSpec["containers"].([]any)[0].(map[string]any)
	c["image"] = python
	c["command"] = []any{"python3", "-c", servedCounter}
}

// TestSandboxPodRestoresWithItsAgent pauses a kubox Sandbox's Pod with its memory (a snapshot
// taken by kubox-node, the node's snapshot API) and restores it into a new Pod
// (checkpoint.RestoredPod): the Pod kubox builds has kubox-agent's init container,
// whose binary the agent runs from an emptyDir, and the agent's token Secret. The restored Pod is
// Ready on kubox-agent's readiness probe, the agent answers with the Sandbox's token and runs new
// processes, and the Python under it still has its secret and counts on. A Pod that keeps the
// finished init container is refused with a reason that says so. A fork of the restored Pod that
// mounts another token answers to that token only.
func TestSandboxPodRestoresWithItsAgent(t *testing.T) {
	requireController(t)
	ns, name := namespace(t), "keeper"
	createSandbox(t, ns, newSandbox(name, "gvisor", withCounter, withAgent))
	waitSandboxReady(t, ns, name)
	ip, tok := agentEndpoint(t, ns, name)
	before := agentCounter(t, ip, tok, func(s counterState) bool { return s.n > 3 })
	pod, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := nodeCheckpoint(t, pod, "pause", false)
	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
	waitPodGone(t, ns, name)

	withInit := checkpoint.RestoredPod(pod, name+"-with-init", pod.Spec.NodeName, dir)
	withInit.Spec.InitContainers = pod.Spec.InitContainers
	createPod(t, ns, withInit)
	msg := waitPodEvent(t, ns, withInit.Name, "Failed")
	if !strings.Contains(msg, "is not in the checkpoint") {
		t.Errorf("Pod %s that keeps the finished init container: event %q, want it to say the container is not in the checkpoint", withInit.Name, msg)
	}
	t.Logf("with the init container: %s", msg)
	deletePod(t, ns, withInit.Name)

	restored := checkpoint.RestoredPod(pod, name+"-resumed", pod.Spec.NodeName, dir)
	start := time.Now()
	createPod(t, ns, restored)
	p := waitRunning(t, ns, restored.Name)
	t.Logf("restored Sandbox Pod Running and Ready in %.3f s, IP %s (before %s)", time.Since(start).Seconds(), p.Status.PodIP, ip)
	after := agentCounter(t, p.Status.PodIP, tok, func(s counterState) bool { return s.n > 0 })
	if after.secret != before.secret {
		t.Fatalf("secret after the restore = %d, before %d: the Python process under the agent did not keep its memory", after.secret, before.secret)
	}
	if after.n < before.n {
		t.Fatalf("counter after the restore = %d, below %d read before the pause: it started over", after.n, before.n)
	}
	later := agentCounter(t, p.Status.PodIP, tok, func(s counterState) bool { return s.n > after.n+2 })
	t.Logf("secret %d kept; counter %d before the pause, %d after the restore, then %d, read through the restored agent",
		before.secret, before.n, after.n, later.n)

	// A fork is another Sandbox, with its own token: its Pod mounts that token where the source's
	// was, and the restored agent must take it and refuse the source's.
	forkTok := rand.Text() + rand.Text()
	_, err = clientset.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "fork-token"}, StringData: map[string]string{sandboxctl.AgentTokenKey: forkTok},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forkDir := nodeCheckpoint(t, p, "fork", true)
	fork := checkpoint.RestoredPod(p, name+"-fork", p.Spec.NodeName, forkDir)
	for i, v := range fork.Spec.Volumes {
		if v.Name == sandboxctl.AgentTokenVolumeName {
			fork.Spec.Volumes[i].Secret.SecretName = "fork-token"
		}
	}
	createPod(t, ns, fork)
	fp := waitRunning(t, ns, fork.Name)
	forked := agentCounter(t, fp.Status.PodIP, forkTok, func(s counterState) bool { return s.n >= later.n })
	if forked.secret != before.secret {
		t.Fatalf("the fork's secret = %d, want %d", forked.secret, before.secret)
	}
	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), "http://"+fp.Status.PodIP+":7070")
	_, err = procs.RunProcess(context.Background(), connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"true"}}}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("the fork's agent with the source's token: %v, want unauthenticated", err)
	}
	t.Logf("fork of the restored Pod (a snapshot of a restore) answers with its own token at counter %d and refuses the source's", forked.n)
}

// TestNodeAPIRefusesWhatItCannotSnapshot: kubox-node answers a Pod it cannot checkpoint with a
// reason (a runc Pod; a Pod not on the node) and a caller without the node token not at all.
func TestNodeAPIRefusesWhatItCannotSnapshot(t *testing.T) {
	ns := namespace(t)
	createPod(t, ns, busyboxPod("plain", "runc"))
	waitRunning(t, ns, "plain")
	client, url := nodeClient(t)
	for _, c := range []struct {
		pod  string
		code connect.Code
		want string
	}{
		{"plain", connect.CodeFailedPrecondition, "only under gVisor"},
		{"absent", connect.CodeNotFound, "has no sandbox on this node"},
	} {
		_, err := client.Checkpoint(context.Background(), connect.NewRequest(&nodev1.CheckpointRequest{Namespace: ns, Pod: c.pod, Snapshot: "s"}))
		if connect.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Checkpoint of %s/%s: %v, want %v saying %q", ns, c.pod, err, c.code, c.want)
		}
		t.Logf("%s: %v", c.pod, err)
	}
	if _, err := os.Stat(filepath.Join(devenv.NewLayout(stateDir).Snapshots, ns, "s")); !os.IsNotExist(err) {
		t.Errorf("a refused checkpoint left a snapshot folder: %v", err)
	}
	// A client that trusts kubox-node (its TLS key, derived from the node token) but sends no
	// token: the server is the real one, and it refuses the call.
	key, err := os.ReadFile(devenv.NewLayout(stateDir).NodeToken)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := nodetls.ClientConfig([]byte(strings.TrimSpace(string(key))))
	if err != nil {
		t.Fatal(err)
	}
	anon := nodev1connect.NewSnapshotServiceClient(&http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}, url)
	_, err = anon.Checkpoint(context.Background(), connect.NewRequest(&nodev1.CheckpointRequest{Namespace: ns, Pod: "plain", Snapshot: "s"}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("Checkpoint without the node token: %v, want unauthenticated", err)
	}
}

// nodeCheckpoint asks the local node's kubox-node for a snapshot of pod (by its UID) and returns
// its folder (the parent of the image the shim restores from). It asks twice, as a caller that lost
// the first answer would: the second answer must be the same snapshot. The test's cleanup deletes
// it.
func nodeCheckpoint(t testing.TB, pod *corev1.Pod, snapshot string, leaveRunning bool) string {
	t.Helper()
	client, _ := nodeClient(t)
	req := &nodev1.CheckpointRequest{Namespace: pod.Namespace, Pod: pod.Name, PodUid: string(pod.UID), Snapshot: snapshot, LeaveRunning: leaveRunning}
	res, err := client.Checkpoint(context.Background(), connect.NewRequest(req))
	if err != nil {
		t.Fatalf("kubox-node Checkpoint of %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	t.Cleanup(func() {
		_, err := client.DeleteSnapshot(context.Background(), connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: pod.Namespace, Snapshot: snapshot}))
		if err != nil {
			t.Errorf("kubox-node DeleteSnapshot %s/%s: %v", pod.Namespace, snapshot, err)
		}
	})
	m := res.Msg.GetSnapshot()
	t.Logf("kubox-node snapshot %s/%s of Pod %s (leave running %t): %d bytes in %.3f s, containers %v, sha256 %s",
		pod.Namespace, snapshot, pod.Name, leaveRunning, m.GetSizeBytes(), m.GetDuration().AsDuration().Seconds(), m.GetContainers(), m.GetSha256())
	again, err := client.Checkpoint(context.Background(), connect.NewRequest(req))
	if err != nil {
		t.Fatalf("the same Checkpoint again: %v, want the snapshot taken", err)
	}
	if got := again.Msg.GetSnapshot().GetSha256(); got != m.GetSha256() {
		t.Fatalf("the same Checkpoint again: sha256 %s, want the snapshot taken (%s)", got, m.GetSha256())
	}
	return filepath.Dir(m.GetImage())
}

// nodeClient is a client of the local node's kubox-node with the node token, and its URL.
func nodeClient(t testing.TB) (nodev1connect.SnapshotServiceClient, string) {
	t.Helper()
	key, err := os.ReadFile(devenv.NewLayout(stateDir).NodeToken)
	if err != nil {
		t.Fatal(err)
	}
	url := devenv.DefaultConfig().NodeAPIURL()
	hc, err := nodeapi.HTTPClient(strings.TrimSpace(string(key)))
	if err != nil {
		t.Fatal(err)
	}
	return nodev1connect.NewSnapshotServiceClient(hc, url), url
}

// agentCounter reads /tmp/state by running cat through the sandbox's agent at ip until ok accepts
// it: each read is a new process the agent starts.
func agentCounter(t testing.TB, ip, tok string, ok func(counterState) bool) counterState {
	t.Helper()
	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), "http://"+ip+":7070")
	var s counterState
	waitFor(t, "the counter through the agent at "+ip, func(ctx context.Context) (bool, error) {
		res, err := procs.RunProcess(ctx, connect.NewRequest(&agentv1.RunProcessRequest{
			Spec: &agentv1.ProcessSpec{Argv: []string{"cat", "/tmp/state"}}}))
		if err != nil {
			return false, err
		}
		s = readCounter(string(res.Msg.GetStdout()))
		return ok(s), nil
	})
	return s
}
