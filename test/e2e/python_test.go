//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const python = "kubox.local/python:dev"

// pythonMain is the sandbox's main process: python3 itself, idle until SIGTERM.
const pythonMain = `import signal, sys
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.pause()`

// pythonProbe computes a few things and reports them, with what it sees of its kernel and PID 1,
// as JSON.
const pythonProbe = `import hashlib, json, sys
print(json.dumps({
    "squares": sum(i * i for i in range(1, 1001)),
    "sha256": hashlib.sha256(b"kubox").hexdigest(),
    "python": "%d.%d" % sys.version_info[:2],
    "gvisor": "gvisor" in open("/proc/version").read().lower(),
    "pid1": open("/proc/1/cmdline").read().split("\0")[0],
}))`

type pythonReport struct {
	Squares int    `json:"squares"`
	SHA256  string `json:"sha256"`
	Python  string `json:"python"`
	GVisor  bool   `json:"gvisor"`
	PID1    string `json:"pid1"`
}

// withPython runs kubox.local/python:dev with python3 as the container's main process.
func withPython(spec map[string]any) {
	podSpec := spec["podTemplate"].(map[string]any)["spec"].(map[string]any)
	c := podSpec["containers"].([]any)[0].(map[string]any)
	c["image"] = python
	c["command"] = []any{"python3", "-c", pythonMain}
}

// TestPythonSandbox runs a Sandbox from kubox.local/python:dev under gVisor and runs Python in it
// through kubectl exec.
func TestPythonSandbox(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("py", "gvisor", withPython))
	waitSandboxReady(t, ns, "py")
	waitRunning(t, ns, "py")
	out := kubectlExec(t, ns, "py", "python3", "-c", pythonProbe)
	var got pythonReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("python3 in the sandbox printed %q: %v", out, err)
	}
	sum := sha256.Sum256([]byte("kubox"))
	want := pythonReport{Squares: 333833500, SHA256: hex.EncodeToString(sum[:]), Python: "3.11", GVisor: true, PID1: "python3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("python3 in the sandbox reported (-want +got):\n%s", diff)
	}
}
