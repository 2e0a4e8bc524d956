//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/internal/devenv"
)

// readyLabel is the Node label kubox-node install sets (internal/node/cli.ReadyLabel).
const readyLabel = "kubox.dev/memory-sandboxes"

// devInstaller is config/node's init container "install" with the local node's layout: its
// containerd config, socket and runsc root below the state folder, and `kubox dev
// restart-containerd` as its "systemctl restart containerd", run in the mount namespace of the
// local kubelet (a host process; this machine's PID 1 refuses nsenter, "Permission denied").
// The flag is a list read as CSV, so the command has no '"' ("bare \" in non-quoted-field").
func devInstaller(command string) string {
	restart := strings.Join([]string{"sh", "-c", fmt.Sprintf(`exec nsenter --target=$(cut -d' ' -f1 %s) --mount -- %s dev restart-containerd --state-dir=%s`,
		filepath.Join(stateDir, "pids", devenv.Kubelet+".pid"), kuboxBin(), stateDir)}, ",")
	args := []string{command, "--host-root=/host",
		"--containerd-config=" + strings.TrimPrefix(filepath.Join(stateDir, "etc", "containerd.toml"), "/"),
		"--containerd-socket=/host" + filepath.Join(stateDir, "containerd", "containerd.sock"),
		"--restart-containerd=" + restart}
	if command == "install" {
		args = append(args, "--runsc-root="+filepath.Join(stateDir, "containerd", "runsc"),
			"--snapshot-root="+filepath.Join(stateDir, "snapshots"),
			"--manifest-key-file="+filepath.Join(stateDir, "manifest-key", "manifest.key"))
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`{name: %s, image: %s, imagePullPolicy: Never, args: [%s],
  env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}},
        {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}, {name: KUBERNETES_SERVICE_PORT, value: "16443"}],
  securityContext: {privileged: true, readOnlyRootFilesystem: true},
  volumeMounts: [{name: host-root, mountPath: /host}]}`, command, devenv.NodeImage, strings.Join(quoted, ", "))
}

// applyOverlay writes a kustomization of base (a folder of the checkout) with the JSON patch
// ops for the DaemonSet name and applies it.
func applyOverlay(t *testing.T, base, name, ops string) {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(repoDir, base)) // kustomize takes no absolute base
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf("resources:\n- %s\npatches:\n- target: {kind: DaemonSet, name: %s}\n  path: patch.yaml\n", rel, name)
	for file, data := range map[string]string{"kustomization.yaml": k, "patch.yaml": ops} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kubectlOK(t, "apply", "--server-side", "--force-conflicts", "-k", dir)
}

func nodeLabel(t *testing.T) (string, bool) {
	n, err := clientset.CoreV1().Nodes().Get(context.Background(), devenv.DefaultConfig().NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := n.Labels[readyLabel]
	return v, ok
}

// suspendResume suspends the Sandbox with its memory and resumes it, returning the counter
// before and after and the MemoryKept condition the resume ended with.
func suspendResume(t *testing.T, ns, name string) (before, after counterState, reason, msg string) {
	t.Helper()
	waitSandboxReady(t, ns, name)
	ip, tok := agentEndpoint(t, ns, name)
	before = agentCounter(t, ip, tok, func(s counterState) bool { return s.n > 3 })
	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
	waitPodGone(t, ns, name)
	if status, reason, msg := memoryKept(sandboxObject(t, ns, name)); status != "True" || reason != "Checkpointed" {
		t.Fatalf("after the suspend: MemoryKept %s/%s (%s), want True/Checkpointed", status, reason, msg)
	}
	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Running"}}`)
	waitFor(t, "MemoryKept Restored or RestoreFailed", func(context.Context) (bool, error) {
		_, reason, msg = memoryKept(sandboxObject(t, ns, name))
		return reason == "Restored" || reason == "RestoreFailed", nil
	})
	if reason == "Restored" {
		ip2, _ := agentEndpoint(t, ns, name)
		after = agentCounter(t, ip2, tok, func(s counterState) bool { return s.n > 0 })
	}
	return before, after, reason, msg
}

// TestNodeInstallOnStockShim: on a node started with gVisor's own shim, memory is not kept;
// applying kubox-node with its installer registers kubox-runsc, labels the Node ready, and a
// Sandbox on RuntimeClass kubox-runsc keeps its memory across suspend and resume; uninstalling
// leaves containerd's config byte-identical to before.
func TestNodeInstallOnStockShim(t *testing.T) {
	requireInCluster(t)
	if !stockShim {
		t.Skip("needs the stock shim: KUBOX_E2E_STOCK_SHIM=1 E2E_RUN=TestNodeInstallOnStockShim make test-e2e")
	}
	cfg := filepath.Join(stateDir, "etc", "containerd.toml")
	original, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := nodeLabel(t); ok {
		t.Fatalf("Node labelled %s=%s before kubox-node install ran", readyLabel, v)
	}

	ns := namespace(t)
	createSandbox(t, ns, newSandbox("stock", "gvisor", withCounter, withAgent, withKeepMemory))
	before, after, reason, msg := suspendResume(t, ns, "stock")
	if reason == "Restored" && after.secret == before.secret && after.n >= before.n {
		t.Fatalf("the stock shim kept the memory (counter %d -> %d): this node is not stock", before.n, after.n)
	}
	if reason == "Restored" {
		t.Errorf("stock shim: the Sandbox started afresh (secret %d -> %d, counter %d -> %d) but says MemoryKept=True/Restored (%s); want a False condition saying memory is unavailable",
			before.secret, after.secret, before.n, after.n, msg)
	}
	t.Logf("stock shim: MemoryKept %s: %s", reason, msg)

	start := time.Now()
	applyOverlay(t, devenv.DevOverlay, devenv.NodeAPI, fmt.Sprintf(`- op: add
  path: /spec/template/spec/initContainers
  value: [%s]
- op: add
  path: /spec/template/spec/volumes/-
  value: {name: host-root, hostPath: {path: /, type: Directory}}
`, devInstaller("install")))
	waitFor(t, "Node label "+readyLabel+"=ready", func(context.Context) (bool, error) {
		v, _ := nodeLabel(t)
		return v == "ready", nil
	})
	t.Logf("kubectl apply -k (config/dev with the installer) to Node %s=ready: %s", readyLabel, time.Since(start).Round(100*time.Millisecond))
	waitFor(t, "DaemonSet kubox-node rolled out", func(ctx context.Context) (bool, error) {
		ds, err := clientset.AppsV1().DaemonSets(devenv.NodeNamespace).Get(ctx, devenv.NodeAPI, metav1.GetOptions{})
		return err == nil && devenv.DaemonSetRolledOut(ds), err
	})

	createSandbox(t, ns, newSandbox("installed", "kubox-runsc", withCounter, withAgent, withKeepMemory))
	before, after, reason, msg = suspendResume(t, ns, "installed")
	if reason != "Restored" || after.secret != before.secret || after.n < before.n {
		t.Fatalf("kubox-runsc after install: MemoryKept %s (%s), secret %d -> %d, counter %d -> %d; want the memory kept",
			reason, msg, before.secret, after.secret, before.n, after.n)
	}
	t.Logf("kubox-runsc: memory kept, counter %d before the suspend, %d after", before.n, after.n)

	uninstall(t, ns)
	got, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(original) {
		t.Errorf("containerd's config %s after uninstall differs from before install:\n%s", cfg, got)
	}
	if _, err := os.Stat("/opt/kubox/etc/containerd-kubox-runsc.toml"); !os.IsNotExist(err) {
		t.Errorf("the drop-in is still on the node after uninstall: %v", err)
	}
}

// uninstall deletes the Sandboxes of ns and waits until their Pods are gone (after the uninstall
// containerd has no kubox-runsc handler to stop them with: they would be left running), deletes
// kubox-node's DaemonSet, runs config/node/uninstall with the local node's layout and waits until
// the Node has no label. Like kubox-node's DaemonSet, it runs in the host's network: the local
// API server listens on the host's 127.0.0.1 only.
func uninstall(t *testing.T, ns string) {
	t.Helper()
	kubectlOK(t, "-n", ns, "delete", "sandboxes.agents.x-k8s.io", "--all", "--wait", "--timeout=2m")
	kubectlOK(t, "-n", ns, "wait", "--for=delete", "pods", "--all", "--timeout=2m")
	kubectlOK(t, "-n", devenv.NodeNamespace, "delete", "daemonset", devenv.NodeAPI, "--wait")
	applyOverlay(t, "config/node/uninstall", "kubox-node-uninstall", fmt.Sprintf(`- op: replace
  path: /spec/template/spec/initContainers
  value: [%s]
- op: replace
  path: /spec/template/spec/containers/0/image
  value: %s
- op: add
  path: /spec/template/spec/containers/0/imagePullPolicy
  value: Never
- op: replace
  path: /spec/template/spec/volumes
  value: [{name: host-root, hostPath: {path: /, type: Directory}}]
- op: add
  path: /spec/template/spec/hostNetwork
  value: true
`, devInstaller("uninstall"), devenv.SandboxImage))
	waitFor(t, "Node without "+readyLabel, func(context.Context) (bool, error) {
		_, ok := nodeLabel(t)
		return !ok, nil
	})
	waitFor(t, "DaemonSet kubox-node-uninstall rolled out", func(ctx context.Context) (bool, error) {
		ds, err := clientset.AppsV1().DaemonSets(devenv.NodeNamespace).Get(ctx, "kubox-node-uninstall", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && devenv.DaemonSetRolledOut(ds), err
	})
	kubectlOK(t, "-n", devenv.NodeNamespace, "delete", "daemonset", "kubox-node-uninstall", "--wait")
}
