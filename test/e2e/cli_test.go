//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubox-dev/kubox/internal/testutil"
)

// kuboxCmd is the kubox CLI built by TestMain, run as a person would after `make dev`: with the
// local environment's kubeconfig (whose router extension tells kubox where kubox-router is) and
// the namespace ns.
func kuboxCmd(ns string, args ...string) *exec.Cmd {
	cmd := exec.Command(kuboxBin(), append([]string{"-n", ns}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	return cmd
}

// exitCode runs cmd and returns its exit code, failing the test when it could not run.
func exitCode(t testing.TB, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return 0
}

// pythonPool applies the README's python template and warm pool in ns and waits until the pool
// has n ready members.
func pythonPool(t testing.TB, ns string, n int64) {
	t.Helper()
	kubectlApply(t, ns, "config/samples/python-template.yaml", "config/samples/python-warmpool.yaml")
	waitPoolReady(t, ns, "python", n)
}

func waitPoolReady(t testing.TB, ns, name string, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("warm pool %s to have %d ready members", name, n), func(ctx context.Context) (bool, error) {
		pool, err := dyn.Resource(pools).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready, _, _ := unstructured.NestedInt64(pool.Object, "status", "readyReplicas")
		return ready >= n, nil
	})
}

// TestKuboxRun is the README's one-liner: `kubox run --pool python` claims a warm gVisor
// sandbox, streams the program's output through kubox-router, passes its exit code through and
// releases the claim.
func TestKuboxRun(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	pythonPool(t, ns, 2)
	var stdout, stderr bytes.Buffer
	cmd := kuboxCmd(ns, "run", "--pool", "python", "--", "python3", "-c", "import sys; print(6*7); sys.exit(3)")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if code := exitCode(t, cmd); code != 3 || stdout.String() != "42\n" {
		t.Fatalf("kubox run = exit %d, stdout %q (stderr %q); want 3 and 42", code, stdout.String(), stderr.String())
	}
	list, err := dyn.Resource(claims).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.GetDeletionTimestamp() == nil {
			t.Errorf("claim %s is still there after kubox run returned; run releases its claim", c.GetName())
		}
	}
}

// TestKuboxExecAndCopy claims a sandbox with `kubox claim`, drives `kubox exec -it` from a
// pseudo-terminal (an interactive sh under gVisor, its exit code passed through) and copies a
// 100 MB file into the sandbox and back, byte for byte.
func TestKuboxExecAndCopy(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	pythonPool(t, ns, 1)
	if out, err := kuboxCmd(ns, "claim", "--pool", "python", "--name", "work").CombinedOutput(); err != nil {
		t.Fatalf("kubox claim: %v\n%s", err, out)
	}

	master, tty := testutil.OpenPTY(t, 30, 100)
	screen := &testutil.SyncBuffer{}
	go func() { _, _ = io.Copy(screen, master) }()
	cmd := kuboxCmd(ns, "exec", "-it", "--claim", "work", "--", "sh")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	exited := make(chan int, 1)
	go func() { exited <- exitCode(t, cmd) }()
	for _, step := range []struct{ in, want string }{
		{"stty size\n", "30 100"},
		{"echo $((6*7))-$(tr A-Z a-z </proc/version | grep -o gvisor | head -1)\n", "42-gvisor"}, // gVisor's kernel, not the host's
	} {
		if _, err := master.WriteString(step.in); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the terminal to show "+step.want, func(context.Context) (bool, error) {
			return strings.Contains(screen.String(), step.want), nil
		})
	}
	if _, err := master.WriteString("exit 5\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 5 {
			t.Errorf("kubox exec -it exited %d, want the shell's 5; screen:\n%s", code, screen.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("kubox exec -it did not return after exit 5; screen:\n%s", screen.String())
	}

	dir := t.TempDir()
	src, back := filepath.Join(dir, "big.bin"), filepath.Join(dir, "back.bin")
	data := make([]byte, 100<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"cp", "--claim", src, "work:/tmp/big.bin"}, {"cp", "--claim", "work:/tmp/big.bin", back}} {
		if out, err := kuboxCmd(ns, args...).CombinedOutput(); err != nil {
			t.Fatalf("kubox %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	got, err := os.ReadFile(back)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Errorf("the 100 MB file came back with %d bytes and another SHA-256", len(got))
	}
	out, err := kuboxCmd(ns, "exec", "--claim", "work", "--", "sha256sum", "/tmp/big.bin").Output()
	if want := fmt.Sprintf("%x", sha256.Sum256(data)); err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("sha256sum in the sandbox = %q, %v; want %s", out, err, want)
	}
}
