package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/nodetls"
	"github.com/kubox-dev/kubox/internal/node/store"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
	"github.com/kubox-dev/kubox/proto/kubox/node/v1/nodev1connect"
)

const token = "node-token-0123456789abcdef0123456789"

// fakeNode is a node whose containerd task folder holds the bundle of one Pod sandbox,
// team-a/py, with the CRI annotations containerd writes.
func fakeNode(t *testing.T) checkpoint.Node {
	t.Helper()
	n := checkpoint.Node{ContainerdState: t.TempDir(), ContainerdRoot: t.TempDir(), KubeletRoot: t.TempDir(), Runsc: "runsc"}
	bundle := filepath.Join(n.TaskDir(), "sandbox-1")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{"annotations": map[string]string{
		"io.kubernetes.cri.container-type": "sandbox", "io.kubernetes.cri.sandbox-id": "sandbox-1",
		"io.kubernetes.cri.sandbox-namespace": "team-a", "io.kubernetes.cri.sandbox-name": "py",
		"io.kubernetes.cri.sandbox-uid": "uid-1",
	}}
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

type call struct {
	runsc checkpoint.Runsc
	opts  checkpoint.Options
}

// serve starts the API on a test server whose checkpoint writes the folder and returns a manifest,
// or fails with fail; it records each call.
func serve(t *testing.T, fail error) (nodev1connect.SnapshotServiceClient, *[]call, string, string) {
	t.Helper()
	root := t.TempDir()
	var calls []call
	s, err := New(Config{Node: fakeNode(t), SnapshotRoot: root, Token: auth.Fixed([]byte(token)),
		checkpoint: func(_ context.Context, r checkpoint.Runsc, o checkpoint.Options) (*checkpoint.Manifest, error) {
			calls = append(calls, call{r, o})
			if fail != nil {
				return nil, fail
			}
			if err := os.Mkdir(o.Dir, 0o700); err != nil {
				return nil, err
			}
			return &checkpoint.Manifest{Kind: o.Kind, Size: 4096, SHA256: "abc", Runsc: "runsc v1", Duration: checkpoint.Duration(250 * time.Millisecond),
				Created: time.Unix(1700000000, 0), Containers: []checkpoint.Container{{Sandbox: true}, {Name: "main"}}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return nodev1connect.NewSnapshotServiceClient(contract.BearerClient(token), srv.URL), &calls, root, srv.URL
}

func TestCheckpointWritesASnapshotOfTheNamespace(t *testing.T) {
	client, calls, root, _ := serve(t, nil)
	res, err := client.Checkpoint(context.Background(), connect.NewRequest(&nodev1.CheckpointRequest{
		Namespace: "team-a", Pod: "py", Snapshot: "pause-1", LeaveRunning: true}))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "team-a", "pause-1")
	if len(*calls) != 1 {
		t.Fatalf("%d checkpoints, want 1", len(*calls))
	}
	o := (*calls)[0].opts
	if o.SandboxID != "sandbox-1" || o.Dir != dir || o.Kind != checkpoint.Full || !o.LeaveRunning || o.Compress {
		t.Errorf("checkpoint options %+v: want the Pod's sandbox into %s, full, leaving it running", o, dir)
	}
	got := res.Msg.GetSnapshot()
	if got.GetImage() != filepath.Join(dir, "image") || got.GetSizeBytes() != 4096 || got.GetSha256() != "abc" ||
		got.GetDuration().AsDuration() != 250*time.Millisecond || got.GetKind() != nodev1.Kind_KIND_FULL ||
		strings.Join(got.GetContainers(), ",") != "main" || got.GetRunscVersion() != "runsc v1" {
		t.Errorf("snapshot %v: want the manifest's figures, the image below %s and the app containers", got, dir)
	}

	_, err = client.Checkpoint(context.Background(), connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "pause-1"}))
	if connect.CodeOf(err) != connect.CodeAlreadyExists || len(*calls) != 1 {
		t.Errorf("a second checkpoint into pause-1: %v after %d checkpoints; want AlreadyExists before any", err, len(*calls))
	}

	if _, err := client.DeleteSnapshot(context.Background(), connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: "team-a", Snapshot: "pause-1"})); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after DeleteSnapshot: %v, want it gone", dir, err)
	}
	if _, err := client.DeleteSnapshot(context.Background(), connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: "team-a", Snapshot: "pause-1"})); err != nil {
		t.Errorf("deleting a snapshot that is gone: %v, want success", err)
	}
}

func TestCheckpointRefusals(t *testing.T) {
	client, calls, _, _ := serve(t, nil)
	for _, c := range []struct {
		req  *nodev1.CheckpointRequest
		code connect.Code
		want string
	}{
		{&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "../team-b/x"}, connect.CodeInvalidArgument, `snapshot "../team-b/x"`},
		{&nodev1.CheckpointRequest{Namespace: "..", Pod: "py", Snapshot: "s"}, connect.CodeInvalidArgument, `namespace ".."`},
		{&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "s", Kind: 7}, connect.CodeInvalidArgument, "KIND_FULL"},
		{&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "s",
			CopyVolumeMounts: []*nodev1.VolumeMount{{Container: "main", Path: "/data/../etc"}}}, connect.CodeInvalidArgument, `path "/data/../etc"`},
		{&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "s",
			CopyVolumeMounts: []*nodev1.VolumeMount{{Container: "Main!", Path: "/data"}}}, connect.CodeInvalidArgument, `container "Main!"`},
		{&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "other", Snapshot: "s"}, connect.CodeNotFound, "team-a/other has no sandbox on this node"},
		{&nodev1.CheckpointRequest{Namespace: "team-b", Pod: "py", Snapshot: "s"}, connect.CodeNotFound, "team-b/py has no sandbox"},
	} {
		_, err := client.Checkpoint(context.Background(), connect.NewRequest(c.req))
		if connect.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Checkpoint(%v) = %v; want %v saying %q", c.req, err, c.code, c.want)
		}
	}
	if len(*calls) != 0 {
		t.Errorf("%d checkpoints ran for refused calls", len(*calls))
	}
}

func TestCheckpointFailureLeavesNoSnapshot(t *testing.T) {
	client, _, root, _ := serve(t, context.DeadlineExceeded)
	_, err := client.Checkpoint(context.Background(), connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "s"}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "checkpoint of Pod team-a/py") {
		t.Errorf("a failed checkpoint: %v, want FailedPrecondition naming the Pod", err)
	}
	if _, err := os.Stat(filepath.Join(root, "team-a", "s")); !os.IsNotExist(err) {
		t.Errorf("the snapshot folder after a failed checkpoint: %v, want none", err)
	}
}

func TestEveryCallNeedsTheNodeToken(t *testing.T) {
	_, calls, _, url := serve(t, nil)
	for name, hc := range map[string]connect.HTTPClient{"none": http.DefaultClient, "wrong": contract.BearerClient(token + "x")} {
		c := nodev1connect.NewSnapshotServiceClient(hc, url)
		_, err := c.Checkpoint(context.Background(), connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "s"}))
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("Checkpoint with %s token: %v, want Unauthenticated", name, err)
		}
		_, err = c.DeleteSnapshot(context.Background(), connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: "team-a", Snapshot: "s"}))
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("DeleteSnapshot with %s token: %v, want Unauthenticated", name, err)
		}
	}
	if len(*calls) != 0 {
		t.Errorf("%d checkpoints ran", len(*calls))
	}
	resp, err := http.Get(url + HealthPath)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s without a token: %v %v, want 200", HealthPath, resp, err)
	}
	if resp != nil {
		_ = resp.Body.Close()
	}
}

func TestNewNeedsATokenAndAnAbsoluteRoot(t *testing.T) {
	if _, err := New(Config{SnapshotRoot: "/s"}); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("New without a token: %v", err)
	}
	if _, err := New(Config{SnapshotRoot: "rel", Token: auth.Fixed([]byte(token))}); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("New with a relative root: %v", err)
	}
}

// fakeRunsc is a runsc that answers --version and writes an image for checkpoint, counting the
// checkpoints in its folder's "count" file.
func fakeRunsc(t *testing.T) (string, func() int) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "runsc")
	script := `#!/bin/sh
for a in "$@"; do case $a in --version) echo "runsc version test"; exit 0;; --image-path=*) d=${a#--image-path=};; esac; done
echo x >> "` + filepath.Join(dir, "count") + `"
mkdir -p "$d" && echo state > "$d/checkpoint.img"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "count"))
		return strings.Count(string(b), "x")
	}
}

// TestCheckpointRetryReturnsTheSnapshotTaken: a caller that lost the answer to a pause asks again
// with the Pod's UID and gets the snapshot already taken, not a second checkpoint (which would save
// the Pod the kubelet restarted); another Pod's request for that name is refused.
func TestCheckpointRetryReturnsTheSnapshotTaken(t *testing.T) {
	node := fakeNode(t)
	bin, checkpoints := fakeRunsc(t)
	node.Runsc = bin
	s, err := New(Config{Node: node, SnapshotRoot: t.TempDir(), Token: auth.Fixed([]byte(token)), Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := nodev1connect.NewSnapshotServiceClient(contract.BearerClient(token), srv.URL)
	req := func(uid string) *connect.Request[nodev1.CheckpointRequest] {
		return connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "pause", PodUid: uid})
	}
	first, err := client.Checkpoint(context.Background(), req("uid-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := client.Checkpoint(context.Background(), req("uid-1"))
	if err != nil || again.Msg.GetSnapshot().GetSha256() != first.Msg.GetSnapshot().GetSha256() || checkpoints() != 1 {
		t.Errorf("the retry: %v, sha256 %q after %q, %d checkpoints; want the same snapshot and 1 checkpoint",
			err, again.Msg.GetSnapshot().GetSha256(), first.Msg.GetSnapshot().GetSha256(), checkpoints())
	}
	for _, uid := range []string{"uid-2", ""} {
		if _, err := client.Checkpoint(context.Background(), req(uid)); connect.CodeOf(err) != connect.CodeAlreadyExists {
			t.Errorf("pod UID %q into the taken name: %v, want AlreadyExists", uid, err)
		}
	}
	other := connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", Snapshot: "other", PodUid: "uid-2"})
	if _, err := client.Checkpoint(context.Background(), other); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("a Pod UID the node does not run: %v, want NotFound", err)
	}
	if checkpoints() != 1 {
		t.Errorf("%d checkpoints, want 1", checkpoints())
	}
}

// TestTheAPIRefusesPlainHTTP: kubox-node serves its API over TLS only (package nodetls): a call
// in plain HTTP, which would carry the node token in clear, is not served; the same call over TLS
// to the key of the node token is.
func TestTheAPIRefusesPlainHTTP(t *testing.T) {
	s, err := New(Config{Node: fakeNode(t), SnapshotRoot: t.TempDir(), Token: auth.Fixed([]byte(token))})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, l, nodetls.ServerConfig(func() ([]byte, error) { return []byte(token), nil }))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	req := connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: "team-a", Snapshot: "s"})
	plain := nodev1connect.NewSnapshotServiceClient(contract.BearerClient(token), "http://"+l.Addr().String())
	if _, err := plain.DeleteSnapshot(t.Context(), req); err == nil {
		t.Errorf("DeleteSnapshot in plain HTTP with the node token was served; want it refused")
	}
	cfg, err := nodetls.ClientConfig([]byte(token))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &contract.BearerTransport{Token: token, Base: &http.Transport{TLSClientConfig: cfg}}}
	if _, err := nodev1connect.NewSnapshotServiceClient(hc, "https://"+l.Addr().String()).DeleteSnapshot(t.Context(), req); err != nil {
		t.Errorf("DeleteSnapshot over TLS: %v", err)
	}
}

// TestDeletingASnapshotWhoseNodeIsGoneRemovesEveryCopy (hole 12 of issue 36): node A took s1
// and put it in the shared store, node B fetched a copy to restore it, then A is gone. Deleting s1
// through C, a node that never held it (what the controller asks once A's Node is gone), removes
// the store's copy; B's sweep then removes B's copy: no copy of the memory is left anywhere.
func TestDeletingASnapshotWhoseNodeIsGoneRemovesEveryCopy(t *testing.T) {
	st := store.Dir{Root: t.TempDir(), Key: testKey}
	ctx := t.Context()
	a, _ := serveWithStore(t, st)
	if _, err := a.Checkpoint(ctx, connect.NewRequest(&nodev1.CheckpointRequest{Namespace: "team-a", Pod: "py", PodUid: "uid-1", Snapshot: "s1"})); err != nil {
		t.Fatal(err)
	}
	b, bRoot := serveWithStore(t, st)
	res, err := b.FetchSnapshot(ctx, connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: "team-a", Snapshot: "s1"}))
	if err != nil || !res.Msg.GetFetched() {
		t.Fatalf("node B's fetch of s1: %v, %v; want it copied from the store", res, err)
	}
	c, _ := serveWithStore(t, st)
	if _, err := c.DeleteSnapshot(ctx, connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: "team-a", Snapshot: "s1"})); err != nil {
		t.Fatalf("DeleteSnapshot through node C: %v", err)
	}
	if has, err := st.Has(ctx, "team-a", "s1"); err != nil || has {
		t.Errorf("the store after the delete through C: holds s1 %t, %v; want it gone", has, err)
	}
	sweeper(t, bRoot, st).sweepOnce(ctx)
	for _, p := range []string{filepath.Join(bRoot, "team-a", "s1"), filepath.Join(bRoot, "team-a", "s1.fetched")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s on node B after its sweep: %v; want it gone", p, err)
		}
	}
}
