//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// withKeepMemory asks for the sandbox's memory to be kept across a suspend.
func withKeepMemory(spec map[string]any) {
	spec["suspendPolicy"] = map[string]any{"keepMemory": true}
}

// memoryKept returns the Sandbox's MemoryKept condition's status, reason and message.
func memoryKept(obj *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "MemoryKept" {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// TestSuspendKeepsMemory: a gVisor Sandbox with suspendPolicy.keepMemory, whose Python under
// kubox-agent keeps a secret and counts, is suspended through its spec (the controller asks
// kubox-node for the snapshot, records it in status.memory, then deletes the Pod) and resumed:
// the new Pod restores from the snapshot, the agent answers with the Sandbox's token, the secret
// is the same and the counter goes on; MemoryKept says Checkpointed, then Restored.
func TestSuspendKeepsMemory(t *testing.T) {
	requireController(t)
	ns, name := namespace(t), "pausable"
	createSandbox(t, ns, newSandbox(name, "gvisor", withCounter, withAgent, withKeepMemory))
	waitSandboxReady(t, ns, name)
	ip, tok := agentEndpoint(t, ns, name)
	before := agentCounter(t, ip, tok, func(s counterState) bool { return s.n > 3 })

	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
	waitPodGone(t, ns, name)
	sb := sandboxObject(t, ns, name)
	snapshot, _, _ := unstructured.NestedString(sb.Object, "status", "memory", "snapshot")
	size, _, _ := unstructured.NestedInt64(sb.Object, "status", "memory", "sizeBytes")
	if status, reason, msg := memoryKept(sb); status != "True" || reason != "Checkpointed" || snapshot == "" || size == 0 {
		t.Fatalf("after the suspend: MemoryKept %s/%s (%s), status.memory snapshot %q size %d; want True/Checkpointed and the snapshot",
			status, reason, msg, snapshot, size)
	}
	_, _, msg := memoryKept(sb)
	t.Logf("suspended: %s", msg)

	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Running"}}`)
	waitSandboxReady(t, ns, name)
	ip2, _ := agentEndpoint(t, ns, name)
	after := agentCounter(t, ip2, tok, func(s counterState) bool { return s.n > 0 })
	if after.secret != before.secret || after.n < before.n {
		t.Fatalf("after the resume: secret %d, counter %d; before the suspend %d, %d: the memory was not kept",
			after.secret, after.n, before.secret, before.n)
	}
	waitFor(t, "MemoryKept=True/Restored", func(context.Context) (bool, error) {
		status, reason, _ := memoryKept(sandboxObject(t, ns, name))
		return status == "True" && reason == "Restored", nil
	})
	later := agentCounter(t, ip2, tok, func(s counterState) bool { return s.n > after.n+2 })
	t.Logf("secret %d kept across suspend and resume; counter %d before, %d after, then %d (Pod IP %s, before %s)",
		before.secret, before.n, after.n, later.n, ip2, ip)
}

// TestSuspendWithoutGVisorSaysMemoryWasNotKept: a runc Sandbox that asks to keep its memory is
// suspended without it, and says so (MemoryKept=False/CheckpointFailed with kubox-node's reason);
// it resumes as a fresh Pod.
func TestSuspendWithoutGVisorSaysMemoryWasNotKept(t *testing.T) {
	requireController(t)
	ns, name := namespace(t), "plain"
	createSandbox(t, ns, newSandbox(name, "runc", withKeepMemory))
	waitSandboxReady(t, ns, name)
	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
	waitPodGone(t, ns, name)
	sb := sandboxObject(t, ns, name)
	status, reason, msg := memoryKept(sb)
	if status != "False" || reason != "CheckpointFailed" || !strings.Contains(msg, "gVisor") {
		t.Errorf("MemoryKept = %s/%s (%s), want False/CheckpointFailed naming gVisor", status, reason, msg)
	}
	if m, found, _ := unstructured.NestedMap(sb.Object, "status", "memory"); found {
		t.Errorf("status.memory = %v after a failed checkpoint, want none", m)
	}
	t.Logf("MemoryKept=%s/%s: %s", status, reason, msg)
	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Running"}}`)
	waitSandboxReady(t, ns, name)
}

// TestFailedRestoreSuspendsAgain: when the snapshot a Sandbox resumes from cannot be restored
// (here, its copy of the agent's emptyDir is gone), the controller suspends the Sandbox again,
// keeps the snapshot and says why (MemoryKept=False/RestoreFailed); resumed without its memory
// (keepMemory false), it starts afresh with the files on its volume intact.
func TestFailedRestoreSuspendsAgain(t *testing.T) {
	requireController(t)
	ns, name := namespace(t), "broken"
	createSandbox(t, ns, newSandbox(name, "gvisor", withCounter, withAgent, withKeepMemory, withVolume))
	waitSandboxReady(t, ns, name)
	ip, tok := agentEndpoint(t, ns, name)
	runThroughAgent(t, ip, tok, "sh", "-c", "echo kept > /data/note")

	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Suspended"}}`)
	waitPodGone(t, ns, name)
	image, _, _ := unstructured.NestedString(sandboxObject(t, ns, name).Object, "status", "memory", "image")
	copies, _ := filepath.Glob(filepath.Join(filepath.Dir(image), "files", "*", "*", "kubox-agent"))
	if image == "" || len(copies) != 1 {
		t.Fatalf("status.memory.image %q, %d copies of the agent's emptyDir in the snapshot: want one", image, len(copies))
	}
	if err := os.RemoveAll(filepath.Dir(copies[0])); err != nil {
		t.Fatal(err)
	}

	patchSandbox(t, ns, name, `{"spec":{"operatingMode":"Running"}}`)
	waitFor(t, "Sandbox "+name+" suspended again after its failed restore", func(context.Context) (bool, error) {
		sb := sandboxObject(t, ns, name)
		mode, _, _ := unstructured.NestedString(sb.Object, "spec", "operatingMode")
		status, reason, _ := memoryKept(sb)
		return mode == "Suspended" && status == "False" && reason == "RestoreFailed", nil
	})
	waitPodGone(t, ns, name)
	sb := sandboxObject(t, ns, name)
	_, _, msg := memoryKept(sb)
	if by := sb.GetAnnotations()["kubox.dev/suspended-by"]; by != "restore-failure" || !strings.Contains(msg, "fill emptyDir") {
		t.Errorf("suspended-by %q, MemoryKept message %q: want restore-failure and the shim's reason", by, msg)
	}
	if kept, _, _ := unstructured.NestedString(sb.Object, "status", "memory", "image"); kept != image {
		t.Errorf("status.memory.image = %q after the failed restore, want the snapshot kept (%s)", kept, image)
	}
	t.Logf("MemoryKept=False/RestoreFailed: %s", msg)

	patchSandbox(t, ns, name, `{"spec":{"suspendPolicy":{"keepMemory":false},"operatingMode":"Running"}}`)
	waitSandboxReady(t, ns, name)
	ip, _ = agentEndpoint(t, ns, name)
	if got := strings.TrimSpace(runThroughAgent(t, ip, tok, "cat", "/data/note")); got != "kept" {
		t.Errorf("/data/note after resuming without the memory = %q, want the file on the volume intact", got)
	}
}

// runThroughAgent runs argv through the sandbox's agent at ip and returns its stdout.
func runThroughAgent(t testing.TB, ip, tok string, argv ...string) string {
	t.Helper()
	res, err := agentRun(ip, tok, argv...)
	if err != nil {
		t.Fatalf("%v through the agent at %s: %v", argv, ip, err)
	}
	if res.GetExit().GetExitCode() != 0 {
		t.Fatalf("%v through the agent at %s exited %d: %s", argv, ip, res.GetExit().GetExitCode(), res.GetStderr())
	}
	return string(res.GetStdout())
}
