//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/devenv"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

var snapshots = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxsnapshots"}

// sdkClient is a Go SDK client on the e2e cluster that reaches sandboxes at their Pod IPs.
func sdkClient(t testing.TB, ns string) *kubox.Client {
	t.Helper()
	c, err := kubox.New(restConfig, kubox.Options{Namespace: ns, Connection: kubox.ConnectDirect})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// countingSource starts a gVisor Sandbox whose Python under kubox-agent keeps a random secret and
// counts, and returns its handle and the counter once it has counted a little.
func countingSource(t testing.TB, c *kubox.Client, ns, name string) (*kubox.Sandbox, counterState) {
	t.Helper()
	createSandbox(t, ns, newSandbox(name, "gvisor", withCounter, withAgent))
	waitSandboxReady(t, ns, name)
	ip, tok := agentEndpoint(t, ns, name)
	before := agentCounter(t, ip, tok, func(s counterState) bool { return s.n > 3 })
	src, err := c.Open(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return src, before
}

// TestForkContinuesFromTheSameMemory forks a running gVisor Sandbox three times through the Go
// SDK (a SandboxSnapshot taken while it runs, then three Sandboxes with spec.snapshotRef): every
// fork's Python has the source's secret and counts on from where the source was, each answers to
// its own agent token only, a file one fork writes is not in the others, and the source keeps
// counting.
func TestForkContinuesFromTheSameMemory(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	c := sdkClient(t, ns)
	src, before := countingSource(t, c, ns, "source")
	forks, err := src.Fork(t.Context(), 3)
	if err != nil {
		t.Fatalf("Fork(3): %v", err)
	}
	snaps, err := dyn.Resource(snapshots).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(snaps.Items) != 1 {
		t.Fatalf("SandboxSnapshots after the fork: %v, %v; want one", snaps, err)
	}
	st, _, _ := unstructured.NestedMap(snaps.Items[0].Object, "status", "snapshot")
	if st["sha256"] == nil || st["sizeBytes"] == nil || st["duration"] == nil {
		t.Errorf("status.snapshot = %v; want its checksum, size and duration", st)
	}
	t.Logf("snapshot %s: %v", snaps.Items[0].GetName(), st)

	srcIP, srcTok := agentEndpoint(t, ns, "source")
	for i, f := range forks {
		if f.Object().Labels["kubox.dev/fork-of"] != "source" {
			t.Errorf("fork %s has labels %v; want kubox.dev/fork-of=source", f.Name(), f.Object().Labels)
		}
		ip, tok := agentEndpoint(t, ns, f.Name())
		if ip == srcIP || tok == srcTok {
			t.Fatalf("fork %s at %s shares the source's address or token", f.Name(), ip)
		}
		got := agentCounter(t, ip, tok, func(s counterState) bool { return s.n > 0 })
		if got.secret != before.secret || got.n < before.n {
			t.Fatalf("fork %s: secret %d, counter %d; the source had %d, %d before the fork: it did not continue from its memory",
				f.Name(), got.secret, got.n, before.secret, before.n)
		}
		if _, err := agentRun(ip, srcTok, "true"); connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("fork %s with the source's token: %v; want Unauthenticated", f.Name(), err)
		}
		if _, err := f.Run(t.Context(), "sh", "-c", "echo "+f.Name()+" > /tmp/who"); err != nil {
			t.Fatalf("fork %d: writing /tmp/who through the SDK: %v", i, err)
		}
	}
	for _, f := range forks {
		res, err := f.Run(t.Context(), "cat", "/tmp/who")
		if err != nil || strings.TrimSpace(string(res.Stdout)) != f.Name() {
			t.Errorf("fork %s reads /tmp/who = %q, %v; want its own name only", f.Name(), res.Stdout, err)
		}
		ip, tok := agentEndpoint(t, ns, f.Name())
		later := agentCounter(t, ip, tok, func(s counterState) bool { return s.n > before.n+3 })
		t.Logf("fork %s: secret %d, counter %d (source at the fork: %d)", f.Name(), later.secret, later.n, before.n)
	}
	if res, err := src.Run(t.Context(), "true"); err != nil || res.ExitCode != 0 {
		t.Errorf("the source after the fork: %+v, %v; want it still answering", res, err)
	}
	agentCounter(t, srcIP, srcTok, func(s counterState) bool { return s.n > before.n+3 })
	for _, f := range forks {
		if err := f.Delete(t.Context()); err != nil {
			t.Errorf("Delete(%s): %v", f.Name(), err)
		}
	}
}

// TestSnapshotComesBackFromTheStore: kubox-node copies every snapshot into its snapshot store;
// when the node's copy is gone (a node that lost its disk, or another node), a Sandbox starting
// from the snapshot has it fetched back from the store, verified, and continues from its memory.
func TestSnapshotComesBackFromTheStore(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	c := sdkClient(t, ns)
	src, before := countingSource(t, c, ns, "source")
	snap, err := src.Snapshot(t.Context())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if !snap.Status.Snapshot.Stored {
		t.Errorf("SandboxSnapshot %s: status.snapshot %+v; want stored (kubox dev runs kubox-node with a snapshot store)", snap.Name, snap.Status.Snapshot)
	}
	l := devenv.NewLayout(stateDir)
	id := snap.Status.Snapshot.Snapshot
	stored, err := checkpoint.Verify(filepath.Join(l.SnapshotStore, ns, id))
	if err != nil {
		t.Fatalf("the store's copy of snapshot %s: %v", id, err)
	}
	local := filepath.Join(l.Snapshots, ns, id)
	if err := os.RemoveAll(local); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	forks, err := c.ForkFrom(t.Context(), snap, 1)
	if err != nil {
		t.Fatalf("ForkFrom a snapshot the node lost: %v", err)
	}
	took := time.Since(start)
	fetched, err := checkpoint.Verify(local)
	if err != nil || fetched.SHA256 != stored.SHA256 {
		t.Fatalf("the node's copy after the fork: %v (sha256 %v); want the store's, verified", err, stored.SHA256)
	}
	ip, tok := agentEndpoint(t, ns, forks[0].Name())
	got := agentCounter(t, ip, tok, func(s counterState) bool { return s.n > 0 })
	if got.secret != before.secret || got.n < before.n {
		t.Fatalf("fork %s: secret %d, counter %d; the source had %d, %d: it did not continue from the fetched snapshot",
			forks[0].Name(), got.secret, got.n, before.secret, before.n)
	}
	t.Logf("snapshot %s (%.1f MiB) fetched from the store; fork %s Ready %s after it was asked for, at counter %d (source %d)",
		id, float64(stored.Size)/(1<<20), forks[0].Name(), took.Round(10*time.Millisecond), got.n, before.n)
	if err := forks[0].Delete(t.Context()); err != nil {
		t.Errorf("Delete(%s): %v", forks[0].Name(), err)
	}
}

// agentRun runs argv through the agent at ip with tok.
func agentRun(ip, tok string, argv ...string) (*agentv1.RunProcessResponse, error) {
	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(tok), "http://"+ip+":7070")
	res, err := procs.RunProcess(context.Background(), connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: argv}}))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// createTemplateWith creates the SandboxTemplate name with spec.
func createTemplateWith(t testing.TB, ns, name string, spec map[string]any) {
	t.Helper()
	tpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
		"metadata": map[string]any{"name": name}, "spec": spec}}
	if _, err := dyn.Resource(templates).Namespace(ns).Create(context.Background(), tpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create SandboxTemplate %s/%s: %v", ns, name, err)
	}
}

// TestSnapshotBackedWarmPool: a snapshot of a sandbox claimed from a template, named by the
// snapshotRef of a template with the same spec, makes a warm pool of restores; a claim from that
// pool gets a sandbox whose Python is the snapshot's process, with everything it had imported and
// its secret, counting on.
func TestSnapshotBackedWarmPool(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	c := sdkClient(t, ns)
	spec := newSandbox("x", "gvisor", withCounter, withAgent).Object["spec"].(map[string]any)
	createTemplateWith(t, ns, "counter", spec)
	src, err := c.Claim(t.Context(), kubox.FromTemplate("counter"))
	if err != nil {
		t.Fatalf("Claim from the template: %v", err)
	}
	defer func() { _ = src.Close(context.Background()) }()
	srcIP, srcTok := agentEndpoint(t, ns, src.Name())
	before := agentCounter(t, srcIP, srcTok, func(s counterState) bool { return s.n > 3 })
	snap, err := src.Snapshot(t.Context())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}

	restored := newSandbox("x", "gvisor", withCounter, withAgent).Object["spec"].(map[string]any)
	restored["snapshotRef"] = map[string]any{"name": snap.Name}
	createTemplateWith(t, ns, "restored", restored)
	createPool(t, ns, "restored", "restored")
	waitPoolReady(t, ns, "restored", 1)
	sb, err := c.Claim(t.Context(), kubox.FromPool("restored"))
	if err != nil {
		t.Fatalf("Claim from the snapshot-backed pool: %v", err)
	}
	defer func() { _ = sb.Close(context.Background()) }()
	if sb.Object().Labels["agents.x-k8s.io/launch-type"] != "warm" || !strings.HasPrefix(sb.Name(), "restored-") {
		t.Errorf("the claim's sandbox %s did not come from the pool: labels %v", sb.Name(), sb.Object().Labels)
	}
	ip, tok := agentEndpoint(t, ns, sb.Name())
	got := agentCounter(t, ip, tok, func(s counterState) bool { return s.n > before.n })
	if got.secret != before.secret {
		t.Fatalf("claimed sandbox %s: secret %d, counter %d; the snapshot's process had %d, %d", sb.Name(), got.secret, got.n, before.secret, before.n)
	}
	t.Logf("claimed %s from the pool: secret %d and counter %d from the snapshot's process (%d, %d when taken)",
		sb.Name(), got.secret, got.n, before.secret, before.n)
}

// withScratch adds an emptyDir "scratch" at /scratch to the sandbox's container.
func withScratch(spec map[string]any) {
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	vols, _ := podSpec["volumes"].([]any)
	podSpec["volumes"] = append(vols, map[string]any{"name": "scratch", "emptyDir": map[string]any{}})
	c := podSpec["containers"].([]any)[0].(map[string]any)
	mounts, _ := c["volumeMounts"].([]any)
	c["volumeMounts"] = append(mounts, map[string]any{"name": "scratch", "mountPath": "/scratch"})
}

// TestSnapshotKeepsTheSandboxLinksAsLinks: a symbolic link the sandbox makes in an emptyDir to a
// file of the node (its kubox-node token) is snapshotted and forked as that link: the snapshot on
// the node holds the link, not the node's file, and the fork reads its own files through its
// links and nothing of the node through that one.
func TestSnapshotKeepsTheSandboxLinksAsLinks(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	c := sdkClient(t, ns)
	l := devenv.NewLayout(stateDir)
	nodeFile := l.NodeToken
	createSandbox(t, ns, newSandbox("source", "gvisor", withCounter, withAgent, withScratch))
	waitSandboxReady(t, ns, "source")
	src, err := c.Open(t.Context(), ns, "source")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Run(t.Context(), "sh", "-c", "echo hi > /scratch/note && ln -s note /scratch/note-link && ln -s "+nodeFile+" /scratch/steal"); err != nil {
		t.Fatalf("making links in /scratch: %v", err)
	}
	snap, err := src.Snapshot(t.Context())
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	secret, err := os.ReadFile(nodeFile)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(filepath.Join(l.Snapshots, ns, snap.Status.Snapshot.Snapshot), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "steal" {
			return err
		}
		if target, err := os.Readlink(path); err != nil || target != nodeFile {
			b, _ := os.ReadFile(path)
			t.Errorf("the snapshot's copy of /scratch/steal: link %q, %v (content %d bytes, node file match %t); want the link, not the node's file",
				target, err, len(b), string(b) == string(secret))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	forks, err := c.ForkFrom(t.Context(), snap, 1)
	if err != nil {
		t.Fatalf("ForkFrom: %v", err)
	}
	fork := forks[0]
	res, err := fork.Run(t.Context(), "sh", "-c", "cat /scratch/note-link; readlink /scratch/steal; cat /scratch/steal || echo unreadable")
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Fields(string(res.Stdout))
	if len(out) != 3 || out[0] != "hi" || out[1] != nodeFile || out[2] != "unreadable" || strings.Contains(string(res.Stdout), strings.TrimSpace(string(secret))) {
		t.Errorf("in the fork: %q; want hi, the link's target, and nothing read through it", res.Stdout)
	}
	if err := fork.Delete(t.Context()); err != nil {
		t.Errorf("Delete(%s): %v", fork.Name(), err)
	}
}

// TestForkGetsACopyOfItsVolume: a fork of a sandbox with a volumeClaimTemplate gets its own new
// claim, filled with what the source's volume held at the snapshot (a file and a link to it), not
// an empty one; what the fork writes there stays its own.
func TestForkGetsACopyOfItsVolume(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	c := sdkClient(t, ns)
	createSandbox(t, ns, newSandbox("source", "gvisor", withCounter, withAgent, withVolume))
	waitSandboxReady(t, ns, "source")
	src, err := c.Open(t.Context(), ns, "source")
	if err != nil {
		t.Fatal(err)
	}
	word := rand.Text()
	if _, err := src.Run(t.Context(), "sh", "-c", "echo "+word+" > /data/word && ln -s word /data/link"); err != nil {
		t.Fatalf("writing /data in the source: %v", err)
	}
	forks, err := src.Fork(t.Context(), 1)
	if err != nil {
		t.Fatalf("Fork(1): %v", err)
	}
	fork := forks[0]
	pvc, err := clientset.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "data-"+fork.Name(), metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound {
		t.Fatalf("the fork's claim data-%s: %v, %v; want its own, Bound", fork.Name(), pvc, err)
	}
	res, err := fork.Run(t.Context(), "cat", "/data/link")
	if err != nil || strings.TrimSpace(string(res.Stdout)) != word {
		t.Fatalf("the fork reads /data/link = %q, %v; want %q, the source's volume at the snapshot", res.Stdout, err, word)
	}
	if _, err := fork.Run(t.Context(), "sh", "-c", "echo fork > /data/word"); err != nil {
		t.Fatal(err)
	}
	if res, err := src.Run(t.Context(), "cat", "/data/word"); err != nil || strings.TrimSpace(string(res.Stdout)) != word {
		t.Errorf("the source reads /data/word = %q, %v after the fork wrote its own; want %q", res.Stdout, err, word)
	}
	if err := fork.Delete(t.Context()); err != nil {
		t.Errorf("Delete(%s): %v", fork.Name(), err)
	}
}
