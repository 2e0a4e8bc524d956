package cli

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubox-dev/kubox/internal/node/install"
)

const (
	testNode       = "node-a"
	originalConfig = "version = 3\nimports = [\n  \"/etc/containerd/conf.d/*.toml\",\n]\n\n[plugins]\n"
)

// fakeNode is a host root with containerd's config and an image folder with the binaries, a
// fake API server holding the Node, and a containerd that is down for downFor checks after
// each restart (forever when downFor < 0). events records restarts, checks and Node writes in
// order.
type fakeNode struct {
	root    string
	cs      *fake.Clientset
	o       *installOptions
	events  []string
	downFor int
	down    int
	// restartFails is how many restarts fail before one succeeds
	restartFails int
}

func newFakeNode(t *testing.T, downFor int) *fakeNode {
	t.Helper()
	f := &fakeNode{root: t.TempDir(), downFor: downFor}
	write(t, filepath.Join(f.root, install.DefaultContainerdConfig), originalConfig)
	bin := t.TempDir()
	for _, name := range install.Binaries {
		write(t, filepath.Join(bin, name), "#!bin "+name)
	}
	f.cs = fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}})
	f.o = &installOptions{hostRoot: f.root, binDir: bin, nodeName: testNode, poll: 1,
		restart: []string{"restart-containerd"}, containerdTimeout: 1 << 40,
		client: func() (kubernetes.Interface, error) { return f.cs, nil },
		run: func(_ context.Context, argv []string) ([]byte, error) {
			f.events = append(f.events, "restart")
			if f.restartFails > 0 {
				f.restartFails--
				return []byte("nsenter: cannot open /proc/1/ns/mnt: Permission denied"), errors.New("exit status 1")
			}
			f.down = f.downFor
			return nil, nil
		},
		answers: func(context.Context) error {
			f.events = append(f.events, "check")
			if f.down != 0 {
				f.down--
				return errors.New("connection refused")
			}
			return nil
		},
	}
	return f
}

func (f *fakeNode) node(t *testing.T) *corev1.Node {
	t.Helper()
	n, err := f.cs.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fakeNode) condition(t *testing.T) *corev1.NodeCondition {
	for _, c := range f.node(t).Status.Conditions {
		if c.Type == ReadyCondition {
			return &c
		}
	}
	return nil
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestInstallCommand: install restarts containerd only when it changed something, labels the
// Node only once containerd answers again, and sets the Node condition; uninstall takes both
// away and restores containerd's config byte for byte.
func TestInstallCommand(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode(t, 2)
	if err := f.o.install(ctx); err != nil {
		t.Fatalf("install: %v", err)
	}
	if diff := cmp.Diff([]string{"restart", "check", "check", "check"}, f.events); diff != "" {
		t.Errorf("install: restarts and checks (-want +got):\n%s", diff)
	}
	if got := f.node(t).Labels[ReadyLabel]; got != "ready" {
		t.Errorf("Node label %s = %q, want ready", ReadyLabel, got)
	}
	if c := f.condition(t); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "Installed" {
		t.Errorf("Node condition %s = %+v, want True/Installed", ReadyCondition, c)
	}

	f.events = nil
	if err := f.o.install(ctx); err != nil {
		t.Fatalf("second install: %v", err)
	}
	if diff := cmp.Diff([]string{"check"}, f.events); diff != "" {
		t.Errorf("second install restarted containerd though nothing changed (-want +got):\n%s", diff)
	}

	f.events, f.downFor = nil, 0
	if err := f.o.uninstall(ctx); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	if diff := cmp.Diff([]string{"restart", "check"}, f.events); diff != "" {
		t.Errorf("uninstall: restarts and checks (-want +got):\n%s", diff)
	}
	if got, ok := f.node(t).Labels[ReadyLabel]; ok {
		t.Errorf("Node label %s = %q after uninstall, want none", ReadyLabel, got)
	}
	if c := f.condition(t); c != nil {
		t.Errorf("Node condition %s = %+v after uninstall, want none", ReadyCondition, c)
	}
	got, err := os.ReadFile(filepath.Join(f.root, install.DefaultContainerdConfig))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(originalConfig, string(got)); diff != "" {
		t.Errorf("containerd's config after uninstall (-want +got):\n%s", diff)
	}
	for _, name := range install.Binaries {
		if _, err := os.Lstat(filepath.Join(f.root, "opt/kubox/bin", name)); !os.IsNotExist(err) {
			t.Errorf("/opt/kubox/bin/%s still on the node after uninstall: %v", name, err)
		}
	}
}

// TestInstallContainerdDoesNotAnswer: when containerd does not come back after the restart,
// the Node is not labelled ready; its condition says why and what to do.
func TestInstallContainerdDoesNotAnswer(t *testing.T) {
	f := newFakeNode(t, -1)
	f.o.containerdTimeout = 5
	err := f.o.install(context.Background())
	if err == nil || !strings.Contains(err.Error(), "containerd") {
		t.Fatalf("install: %v, want an error saying containerd does not answer", err)
	}
	if got, ok := f.node(t).Labels[ReadyLabel]; ok {
		t.Errorf("Node labelled %s=%q though containerd does not answer", ReadyLabel, got)
	}
	c := f.condition(t)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "ContainerdNotAnswering" || !strings.Contains(c.Message, "journalctl -u containerd") {
		t.Errorf("Node condition %s = %+v, want False/ContainerdNotAnswering naming the fix", ReadyCondition, c)
	}
}

// TestContainerdAnswers: the check asks containerd's gRPC health service on its socket.
func TestContainerdAnswers(t *testing.T) {
	ctx := context.Background()
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	if err := containerdAnswers(ctx, sock); err == nil {
		t.Fatal("containerdAnswers with no socket: nil, want an error")
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()
	if err := containerdAnswers(ctx, sock); err != nil {
		t.Errorf("containerdAnswers while serving: %v", err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if err := containerdAnswers(ctx, sock); err == nil {
		t.Error("containerdAnswers while NOT_SERVING: nil, want an error")
	}
}

// TestInstallRetriesAFailedRestart: when the restart fails, the files are in place but containerd
// still runs without the handler; the next install (the init container's retry) restarts again
// instead of finding nothing changed, and only then labels the Node.
func TestInstallRetriesAFailedRestart(t *testing.T) {
	ctx := context.Background()
	f := newFakeNode(t, 0)
	f.restartFails = 1
	if err := f.o.install(ctx); err == nil || !strings.Contains(err.Error(), "restart containerd") {
		t.Fatalf("install with a failing restart: %v, want an error saying the restart failed", err)
	}
	if got, ok := f.node(t).Labels[ReadyLabel]; ok {
		t.Errorf("Node labelled %s=%q though containerd was not restarted", ReadyLabel, got)
	}
	f.events = nil
	if err := f.o.install(ctx); err != nil {
		t.Fatalf("second install: %v", err)
	}
	if diff := cmp.Diff([]string{"restart", "check"}, f.events); diff != "" {
		t.Errorf("second install after a failed restart (-want +got):\n%s", diff)
	}
	if got := f.node(t).Labels[ReadyLabel]; got != "ready" {
		t.Errorf("Node label %s = %q, want ready", ReadyLabel, got)
	}
	f.events = nil
	if err := f.o.install(ctx); err != nil {
		t.Fatalf("third install: %v", err)
	}
	if diff := cmp.Diff([]string{"check"}, f.events); diff != "" {
		t.Errorf("third install restarted containerd though it had been restarted (-want +got):\n%s", diff)
	}
}
