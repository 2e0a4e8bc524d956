package sdk

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// claimWithAgent claims a sandbox from the template "python" and starts its agent.
func claimWithAgent(t *testing.T, f *fixture) *kubox.Sandbox {
	t.Helper()
	sb, err := f.sdk.Claim(t.Context(), kubox.FromTemplate("python"))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	f.startAgent(t, sb)
	return sb
}

func TestStartStreamsStdinAndOutput(t *testing.T) {
	f := setup(t)
	sb := claimWithAgent(t, f)

	input := strings.Repeat("a line of input\n", 20000) // 320 KB, several stdin chunks
	var stdout, stderr bytes.Buffer
	p, err := sb.Start(t.Context(), kubox.Cmd{Shell: "cat; echo done >&2; exit 5", Stdin: strings.NewReader(input),
		Stdout: &stdout, Stderr: &stderr, Env: map[string]string{"X": "1"}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if p.ID() == "" {
		t.Error("ID() is empty")
	}
	code, err := p.Wait()
	if err != nil || code != 5 {
		t.Fatalf("Wait = %d, %v; want 5", code, err)
	}
	if stdout.String() != input || stderr.String() != "done\n" {
		t.Errorf("stdout %d bytes (want the %d of the input), stderr %q (want done)", stdout.Len(), len(input), stderr.String())
	}

	// Output arrives while the process runs, in order.
	lines := &lineWriter{got: make(chan string, 10)}
	p, err = sb.Start(t.Context(), kubox.Cmd{Args: []string{"sh", "-c", "echo one; sleep 0.3; echo two"}, Stdout: lines})
	if err != nil {
		t.Fatal(err)
	}
	if first := <-lines.got; first != "one\n" {
		t.Errorf("first output %q; want one", first)
	}
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	if second := <-lines.got; second != "two\n" {
		t.Errorf("second output %q; want two", second)
	}
}

// lineWriter passes every write on a channel.
type lineWriter struct{ got chan string }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.got <- string(p)
	return len(p), nil
}

func TestStartOnATTYAndSignal(t *testing.T) {
	f := setup(t)
	sb := claimWithAgent(t, f)

	var out bytes.Buffer
	p, err := sb.Start(t.Context(), kubox.Cmd{Shell: "tty >/dev/null && echo is-a-tty; stty size", TTY: &kubox.TTYSize{Rows: 33, Cols: 101},
		Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v; output %q", code, err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "is-a-tty") || !strings.Contains(s, "33 101") {
		t.Errorf("output %q; want is-a-tty and the size 33 101", s)
	}

	long, err := sb.Start(t.Context(), kubox.Cmd{Args: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := long.Signal(t.Context(), 15); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if code, err := long.Wait(); err != nil || code != 128+15 {
		t.Errorf("Wait after SIGTERM = %d, %v; want 143", code, err)
	}
}

func TestFiles(t *testing.T) {
	f := setup(t)
	sb := claimWithAgent(t, f)
	fs := sb.Files()
	ctx := t.Context()

	big := make([]byte, 5<<20+123)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile(ctx, "/data/big.bin", big, 0o640); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	got, err := fs.ReadFile(ctx, "/data/big.bin")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("ReadFile = %d bytes, %v; want the %d bytes written", len(got), err, len(big))
	}
	// Write streams a reader of unknown length; Read streams back.
	if err := fs.Write(ctx, "/data/stream.txt", io.MultiReader(strings.NewReader("hello "), strings.NewReader("world")), 0); err != nil {
		t.Fatalf("Write: %v", err)
	}
	r, err := fs.Read(ctx, "/data/stream.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || string(b) != "hello world" {
		t.Errorf("Read = %q, %v; want hello world", b, err)
	}

	fi, err := fs.Stat(ctx, "/data/big.bin")
	if err != nil || fi.Size != int64(len(big)) || fi.Mode != 0o640 || fi.IsDir || fi.Name != "big.bin" || fi.Path != "/data/big.bin" {
		t.Errorf("Stat = %+v, %v; want big.bin, %d bytes, mode 0640", fi, err, len(big))
	}
	if err := fs.MakeDir(ctx, "/data/a/b/c"); err != nil {
		t.Fatalf("MakeDir: %v", err)
	}
	if err := fs.MakeDir(ctx, "/data/a/b/c"); err != nil {
		t.Errorf("MakeDir of an existing directory: %v; want success", err)
	}
	entries, err := fs.List(ctx, "/data")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if want := []string{"a", "big.bin", "stream.txt"}; !slices.Equal(names, want) || !entries[0].IsDir || entries[0].Mode&os.ModeDir == 0 {
		t.Errorf("List = %v (%+v); want %v with a a directory", names, entries, want)
	}

	if err := fs.Remove(ctx, "/data/a", false); err == nil {
		t.Error("Remove of a non-empty directory without recursive succeeded")
	}
	if err := fs.Remove(ctx, "/data/a", true); err != nil {
		t.Fatalf("Remove recursive: %v", err)
	}
	if _, err := fs.Stat(ctx, "/data/a"); !errors.Is(err, kubox.ErrNotFound) || !strings.Contains(err.Error(), "/data/a") {
		t.Errorf("Stat after Remove = %v; want ErrNotFound naming the path", err)
	}
}

func TestFilesWatch(t *testing.T) {
	f := setup(t)
	sb := claimWithAgent(t, f)
	fs := sb.Files()
	if err := fs.MakeDir(t.Context(), "/w"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	events, errs, err := fs.Watch(ctx, "/w", true)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if err := fs.WriteFile(t.Context(), "/w/new.txt", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(framework.DefaultTimeout)
	for seen := false; !seen; {
		select {
		case ev := <-events:
			seen = ev.Path == "/w/new.txt" && (ev.Op == "create" || ev.Op == "rename" || ev.Op == "write")
		case err := <-errs:
			t.Fatalf("watch ended: %v", err)
		case <-timeout:
			t.Fatal("no event for /w/new.txt")
		}
	}
	cancel()
	for range events { // closed once the watch has stopped
	}

	if _, _, err := fs.Watch(t.Context(), "/not-there", false); !errors.Is(err, kubox.ErrNotFound) {
		t.Errorf("Watch(/not-there) = %v; want ErrNotFound", err)
	}
}

func TestSuspendAndResume(t *testing.T) {
	f := setup(t)
	sb := claimWithAgent(t, f)
	podUID := framework.Read[corev1.Pod](t, env, f.ns, sb.Name()).UID

	if err := sb.Suspend(t.Context()); err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	obj := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, sb.Name())
	if obj.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended ||
		!meta.IsStatusConditionTrue(obj.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended) {
		t.Errorf("after Suspend: operatingMode %q, conditions %+v; want Suspended and Suspended=True", obj.Spec.OperatingMode, obj.Status.Conditions)
	}
	if found, err := env.Get(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: sb.Name()}}); found || err != nil {
		t.Errorf("the Pod after Suspend: found %v, %v; want it gone", found, err)
	}
	if _, err := sb.Run(t.Context(), "true"); !errors.Is(err, kubox.ErrNotReady) {
		t.Errorf("Run while suspended = %v; want ErrNotReady", err)
	}
	// A suspended claim can be connected to, to resume it.
	again, err := f.sdk.Connect(t.Context(), sb.ClaimName())
	if err != nil {
		t.Fatalf("Connect to the suspended claim: %v", err)
	}

	if err := again.Resume(t.Context()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	obj = again.Object()
	if obj.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeRunning || len(obj.Status.PodIPs) == 0 {
		t.Errorf("after Resume: operatingMode %q, podIPs %v; want Running with an IP", obj.Spec.OperatingMode, obj.Status.PodIPs)
	}
	if pod := framework.Read[corev1.Pod](t, env, f.ns, sb.Name()); pod.UID == podUID {
		t.Error("the Pod after Resume is the one from before Suspend")
	}
	if res, err := again.Run(t.Context(), "echo", "back"); err != nil || string(res.Stdout) != "back\n" {
		t.Errorf("Run after Resume = %+v, %v", res, err)
	}
}

// TestSuspendKeepingMemoryWithoutANodeSaysSo: Suspend with KeepMemory against a controller that
// cannot reach kubox-node (none is configured here) suspends the sandbox without its memory and
// says so: ErrMemoryNotKept with the controller's reason, and MemoryKept=False on the Sandbox.
func TestSuspendKeepingMemoryWithoutANodeSaysSo(t *testing.T) {
	f := setup(t)
	sb := claimWithAgent(t, f)
	err := sb.Suspend(t.Context(), kubox.KeepMemory())
	if !errors.Is(err, kubox.ErrMemoryNotKept) || !strings.Contains(err.Error(), "controllers.sandbox.memory.tokenFile") {
		t.Fatalf("Suspend(KeepMemory) = %v; want ErrMemoryNotKept naming the missing configuration", err)
	}
	obj := framework.Read[sandboxv1beta1.Sandbox](t, env, f.ns, sb.Name())
	c := meta.FindStatusCondition(obj.Status.Conditions, sandboxv1beta1.SandboxConditionMemoryKept)
	if obj.Spec.SuspendPolicy == nil || !obj.Spec.SuspendPolicy.KeepMemory || c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != sandboxv1beta1.SandboxReasonCheckpointFailed || obj.Status.Memory != nil ||
		!meta.IsStatusConditionTrue(obj.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended) {
		t.Errorf("after Suspend(KeepMemory): suspendPolicy %+v, MemoryKept %+v, memory %+v; want keepMemory set, "+
			"False/CheckpointFailed, no snapshot, and Suspended=True", obj.Spec.SuspendPolicy, c, obj.Status.Memory)
	}
	t.Logf("Suspend(KeepMemory): %v", err)
}
