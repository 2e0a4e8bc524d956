//go:build e2e

package e2e

import (
	"context"
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
