package sandboxclaim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/test/integration/framework"
)

// startGarbageCollector runs kube-controller-manager's garbage collector, and only it, against the
// test API server until t ends, so that the deletion storms see what a cluster does when an owner
// goes: its dependents (a claim's Sandbox, a pool's members, a Sandbox's Pod and Service) are
// deleted, and a dependent whose owner references changed since the collector read it is not
// (the collector deletes with the resourceVersion it read as a precondition). The binary is the
// one hack/tools/install.sh built with kube-apiserver (install.sh envtest, which make
// test-integration runs, builds the kubernetes tool).
func startGarbageCollector(t *testing.T) {
	t.Helper()
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(repo, "hack", "tools", "install.sh"), "dir", "kubernetes").Output()
	if err != nil {
		t.Fatalf("Finding kube-controller-manager (hack/tools/install.sh dir kubernetes): %v", err)
	}
	bin := filepath.Join(strings.TrimSpace(string(out)), "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kube-controller-manager, the garbage collector of the deletion storms, is not built: %v; run hack/tools/install.sh envtest", err)
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--authentication-skip-lookup", "--secure-port=0", "--leader-elect=false",
		"--controllers=garbage-collector-controller", "--concurrent-gc-syncs=5", "--kube-api-qps=200", "--kube-api-burst=400")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = gcProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("Starting kube-controller-manager's garbage collector: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the process this test started, by its PID
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("kube-controller-manager's log (last 4KiB):\n%s", b[max(0, len(b)-4096):])
			}
		}
	})
}
