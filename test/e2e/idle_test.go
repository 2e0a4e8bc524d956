//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// withIdlePolicy gives the sandbox spec.idlePolicy: suspend after a minute without activity;
// runningProcesses as given.
func withIdlePolicy(runningProcesses string) sandboxOpt {
	return func(spec map[string]any) {
		spec["idlePolicy"] = map[string]any{"suspendAfter": "1m", "runningProcesses": runningProcesses}
	}
}

// kuboxOutput runs the kubox CLI in ns and returns its combined output, failing the test when it
// exits non-zero.
func kuboxOutput(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := kuboxCmd(ns, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubox %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// sandboxObject reads Sandbox ns/name.
func sandboxObject(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	sb, err := dyn.Resource(sandboxes).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// TestIdleSandboxSuspendsAndWakes runs three gVisor sandboxes with a one-minute idle policy: one
// left silent after `kubox exec` wrote a file on its volume, one running a background process,
// and one whose background process writes files to its volume without pause, with the policy's
// runningProcesses Ignore. The silent one is suspended by the controller after at least a minute
// (its Pod goes, its PVC stays), and the next `kubox exec`, through kubox-router, wakes it and
// reads the file; the busy one stays Running with status.idle naming the process; the writer is
// suspended in the middle of its writes, and after the wake every file it had finished is
// byte-identical to the checksum it recorded.
func TestIdleSandboxSuspendsAndWakes(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("quiet", "gvisor", withPython, withAgent, withVolume, withIdlePolicy("KeepAwake")))
	createSandbox(t, ns, newSandbox("busy", "gvisor", withPython, withAgent, withIdlePolicy("KeepAwake")))
	createSandbox(t, ns, newSandbox("writer", "gvisor", withPython, withAgent, withVolume, withIdlePolicy("Ignore")))
	waitSandboxReady(t, ns, "quiet")
	waitSandboxReady(t, ns, "busy")
	waitSandboxReady(t, ns, "writer")
	kuboxOutput(t, ns, "exec", "writer", "--", "sh", "-c", "setsid -f sh -c '"+midWriteLoop+"' </dev/null >/dev/null 2>&1")

	kuboxOutput(t, ns, "exec", "quiet", "--", "sh", "-c", "echo kept-across-the-idle-suspend > /data/note")
	kuboxOutput(t, ns, "exec", "busy", "--", "sh", "-c", "setsid -f sleep 900 </dev/null >/dev/null 2>&1")
	lastRequest := time.Now()

	waitFor(t, "Sandbox quiet suspended by its idle policy", func(context.Context) (bool, error) {
		sb := sandboxObject(t, ns, "quiet")
		mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
		return mode == "Suspended" && sb.GetAnnotations()["kubox.dev/suspended-by"] == "idle-policy", nil
	})
	if idle := time.Since(lastRequest); idle < time.Minute {
		t.Errorf("Sandbox quiet was suspended %s after the last request; its policy says 1m", idle.Round(time.Second))
	}
	waitPodGone(t, ns, "quiet")
	if _, err := clientset.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data-quiet", metav1.GetOptions{}); err != nil {
		t.Errorf("the PVC of the idle-suspended sandbox: %v; want it kept", err)
	}
	reason, _, _ := unstructured.NestedString(sandboxObject(t, ns, "quiet").Object, "status", "idle", "reason")
	if reason != "Suspended" {
		t.Errorf("status.idle.reason of the suspended sandbox = %q, want Suspended", reason)
	}

	// The busy sandbox reaches its deadline too, and stays awake for its process.
	waitFor(t, "Sandbox busy checked at its deadline", func(context.Context) (bool, error) {
		reason, _, _ := unstructured.NestedString(sandboxObject(t, ns, "busy").Object, "status", "idle", "reason")
		return reason != "" && reason != "Idle", nil
	})
	sb := sandboxObject(t, ns, "busy")
	mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
	idle, _, _ := unstructured.NestedStringMap(sb.Object, "status", "idle")
	if mode != "Running" || idle["reason"] != "RunningProcesses" || !strings.Contains(idle["message"], "sleep") {
		t.Errorf("Sandbox busy with a background process: operatingMode %q, status.idle %v; want Running, reason RunningProcesses naming sleep",
			mode, idle)
	}

	checkSuspendedMidWrite(t, ns, "writer")

	start := time.Now()
	if got := kuboxOutput(t, ns, "exec", "quiet", "--", "cat", "/data/note"); got != "kept-across-the-idle-suspend" {
		t.Errorf("kubox exec on the idle-suspended sandbox printed %q; want the file it left", got)
	}
	t.Logf("kubox exec woke the idle-suspended gVisor sandbox (with a PVC) and answered in %s", time.Since(start).Round(time.Millisecond))
	if mode, _, _ := unstructured.NestedString(sandboxObject(t, ns, "quiet").Object, "spec", "operatingMode"); mode != "Running" {
		t.Errorf("after the wake, operatingMode = %q; want Running", mode)
	}
}

// midWriteLoop (no single quote in it: it is quoted so) writes a new 64 KiB file of random bytes to /data/w every ~0.1 s, and after each
// appends its SHA-256 to /data/w/manifest, until the sandbox is suspended under it.
const midWriteLoop = `mkdir -p /data/w && cd /data/w && i=0 && while :; do ` +
	`head -c 65536 /dev/urandom > f$i && sha256sum f$i >> manifest; i=$((i+1)); sleep 0.1; done`

// verifyManifest prints how many complete lines /data/w/manifest has and the files among them
// whose content no longer matches (the last line may be torn by the suspend: it is not counted).
const verifyManifest = `import hashlib
lines = open('/data/w/manifest', 'rb').read().split(b'\n')[:-1]
bad = [n for h, n in (l.decode().split('  ', 1) for l in lines)
       if hashlib.sha256(open('/data/w/' + n, 'rb').read()).hexdigest() != h]
print(len(lines), len(bad), ' '.join(bad))`

// checkSuspendedMidWrite waits until the idle policy suspends Sandbox name while midWriteLoop
// writes, wakes it with `kubox exec`, and checks every file the loop finished against the
// checksum it recorded.
func checkSuspendedMidWrite(t *testing.T, ns, name string) {
	t.Helper()
	waitFor(t, "Sandbox "+name+" suspended by its idle policy while its process writes", func(context.Context) (bool, error) {
		sb := sandboxObject(t, ns, name)
		mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
		return mode == "Suspended" && sb.GetAnnotations()["kubox.dev/suspended-by"] == "idle-policy", nil
	})
	waitPodGone(t, ns, name)
	fields := strings.Fields(kuboxOutput(t, ns, "exec", name, "--", "python3", "-c", verifyManifest))
	if len(fields) < 2 {
		t.Fatalf("checking the files written up to the suspend: %q", fields)
	}
	if fields[1] != "0" || fields[0] == "0" {
		t.Errorf("after an idle suspend in the middle of writes: %s files finished, %s of them changed (%v); want many, none changed",
			fields[0], fields[1], fields[2:])
	}
	t.Logf("Sandbox %s was suspended while writing; all %s files it finished were byte-identical after the wake", name, fields[0])
}
