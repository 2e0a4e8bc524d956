package sandboxsnapshot

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/controller/sandboxsnapshot"
	"github.com/kubox-dev/kubox/internal/node/checkpoint"
	"github.com/kubox-dev/kubox/internal/node/nodetls"
	"github.com/kubox-dev/kubox/internal/node/server"
	"github.com/kubox-dev/kubox/internal/node/store"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

const nodeToken = "node-token-0123456789abcdef0123456789"

// manifestKey is the manifest key of the test's kubox-node and its store: a snapshot in the store
// is fetched only when signed with it.
var manifestKey = checkpoint.Key("0123456789abcdef0123456789abcdef")

// kuboxNode is a real kubox-node API server on 127.0.0.1 over TLS: its snapshot root and its
// snapshot store are folders of the test.
type kuboxNode struct {
	url, tokenFile, root, store string
}

func startKuboxNode(t *testing.T) *kuboxNode {
	t.Helper()
	dir := t.TempDir()
	n := &kuboxNode{root: filepath.Join(dir, "snapshots"), store: filepath.Join(dir, "store"), tokenFile: filepath.Join(dir, "token")}
	if err := os.WriteFile(n.tokenFile, []byte(nodeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{SnapshotRoot: n.root, Store: store.Dir{Root: n.store, Key: manifestKey},
		Token: auth.Fixed([]byte(nodeToken)), Key: manifestKey})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(ctx, l, nodetls.ServerConfig(func() ([]byte, error) { return []byte(nodeToken), nil }))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("kubox-node stopped: %v", err)
		}
	})
	n.url = "https://" + l.Addr().String()
	return n
}

// startController starts kubox-controller for the namespaces (the first is the test's), its
// node client pointed at n (every node's address is n's: kubox dev's nodeAPIURL).
func startController(t *testing.T, n *kuboxNode, namespaces ...string) {
	t.Helper()
	watchAll := func(o *ctrl.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	env.StartKubox(t, namespaces[0], func(cfg *configv1alpha1.ControllerConfiguration) {
		cfg.Controllers.Sandbox.Memory.TokenFile = n.tokenFile
		cfg.Controllers.Sandbox.Memory.NodeAPIURL = n.url
	}, watchAll)
}

// copies writes the snapshot's folder on the node and in the store, as kubox-node leaves them
// after a checkpoint, and returns the two folders.
func (n *kuboxNode) copies(t *testing.T, ns, snapshot string) []string {
	t.Helper()
	var dirs []string
	for _, root := range []string{n.root, n.store} {
		d := filepath.Join(root, ns, snapshot)
		if err := os.MkdirAll(filepath.Join(d, "image"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "image", "checkpoint.img"), []byte("memory with secrets"), 0o600); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// signedInStore writes the snapshot's folder in the store only, with its manifest signed, as a
// kubox-node on another node leaves it after a checkpoint: a node that restores it fetches it.
// It returns the folder the fetch copies it to on the node.
func (n *kuboxNode) signedInStore(t *testing.T, ns, snapshot string) string {
	t.Helper()
	d := filepath.Join(n.store, ns, snapshot)
	if err := os.MkdirAll(filepath.Join(d, "image"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "image", "checkpoint.img"), []byte("memory with secrets"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &checkpoint.Manifest{Version: 1, Kind: checkpoint.Full, Pod: checkpoint.PodRef{Namespace: ns, Name: "src", UID: "uid-src"}}
	if err := checkpoint.WriteManifest(d, m); err != nil {
		t.Fatal(err)
	}
	if err := manifestKey.Sign(d, ns, snapshot); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(n.root, ns, snapshot)
}

// exist reports which of dirs exist.
func exist(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// node creates a Node labelled as a snapshot node, Ready, at 127.0.0.1.
func node(t *testing.T, name string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{contract.SnapshotNodeLabel: "true"}}}
	env.Create(t, n)
	n.Status = corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(),
			LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}}
	if err := env.Client.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), n) })
}

// snapshotBuilder builds a SandboxSnapshot fixture.
type snapshotBuilder struct{ s *extv1beta1.SandboxSnapshot }

func makeSnapshot(ns, name, sandbox string) *snapshotBuilder {
	return &snapshotBuilder{&extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: sandbox}}}}
}

// withFinalizer: the controller's first pass added its finalizer before the checkpoint.
func (b *snapshotBuilder) withFinalizer() *snapshotBuilder {
	b.s.Finalizers = append(b.s.Finalizers, sandboxsnapshot.Finalizer)
	return b
}

func (b *snapshotBuilder) maxCount(n int32) *snapshotBuilder {
	b.s.Spec.Retention = &extv1beta1.SnapshotRetention{MaxCount: ptr.To(n)}
	return b
}

func (b *snapshotBuilder) obj() *extv1beta1.SandboxSnapshot { return b.s }

// create creates the snapshot, then writes the status of a taken snapshot named by its UID (or
// by name when name is set) on node, stored when stored.
func create(t *testing.T, b *snapshotBuilder, nodeName, name string, stored bool) *extv1beta1.SandboxSnapshot {
	t.Helper()
	s := b.obj()
	env.Create(t, s)
	if name == "" {
		name = string(s.UID)
	}
	st := extv1beta1.SandboxSnapshotStatus{
		Conditions: []metav1.Condition{{Type: extv1beta1.SnapshotConditionReady, Status: metav1.ConditionTrue,
			Reason: extv1beta1.SnapshotReasonTaken, Message: "taken", LastTransitionTime: metav1.Now()}},
		Snapshot: &sandboxv1beta1.MemoryStatus{Snapshot: name, NodeName: nodeName, Image: "/snapshots/" + s.Namespace + "/" + name + "/image",
			SizeBytes: 1 << 20, Stored: stored, Duration: &metav1.Duration{Duration: time.Second}, TakenAt: ptr.To(metav1.Now())},
	}
	// The controller may be writing SandboxNotRunning (there is no Sandbox): write over it.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		s.Status = st
		return env.Client.Status().Update(t.Context(), s)
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitForCondition waits until the snapshot has the condition of type with reason, its message
// holding msg.
func waitForCondition(t *testing.T, s *extv1beta1.SandboxSnapshot, condType, reason, msg string) {
	t.Helper()
	framework.WaitForObject(t, env, &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}},
		func(got *extv1beta1.SandboxSnapshot) (bool, string) {
			c := meta.FindStatusCondition(got.Status.Conditions, condType)
			return c != nil && c.Reason == reason && strings.Contains(c.Message, msg), "conditions " + conds(got)
		})
}

func conds(s *extv1beta1.SandboxSnapshot) string {
	var b strings.Builder
	for _, c := range s.Status.Conditions {
		b.WriteString(c.Type + "=" + string(c.Status) + "/" + c.Reason + ": " + c.Message + "; ")
	}
	return b.String()
}
