//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// suspendResumeCycles is how many times TestFilesSurviveSuspendResumeCycles suspends and resumes
// its sandbox (KUBOX_E2E_CYCLES, default 20). Each cycle is a new Pod on the same volume, so what
// could go wrong goes wrong in the first few; 20 keep make test's e2e tier short (a cycle takes
// about 4.4 s), and KUBOX_E2E_CYCLES=100 is the long run docs/benchmarks.md reports.
func suspendResumeCycles(t *testing.T) int {
	n, err := strconv.Atoi(envOr("KUBOX_E2E_CYCLES", "20"))
	if err != nil || n < 1 {
		t.Fatalf("KUBOX_E2E_CYCLES=%q: want a positive number of cycles", envOr("KUBOX_E2E_CYCLES", ""))
	}
	return n
}

// TestFilesSurviveSuspendResumeCycles suspends and resumes a gVisor sandbox with a volume many
// times. Before each suspend it writes a new file of random bytes and appends to a log, then
// lists the SHA-256 of every file on the volume; after each resume the new Pod must list exactly
// the same: no file lost, truncated or changed, after the first resume or the last.
func TestFilesSurviveSuspendResumeCycles(t *testing.T) {
	requireController(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("cycles", "gvisor", withVolume))
	waitSandboxReady(t, ns, "cycles")
	cycles := suspendResumeCycles(t)
	checksums := "cd /data && sha256sum c-* log"
	start := time.Now()
	for i := 1; i <= cycles; i++ {
		before := kubectlExec(t, ns, "cycles", "sh", "-c", fmt.Sprintf(
			"head -c 65536 /dev/urandom > /data/c-%03d && echo %d >> /data/log && %s", i, i, checksums))
		if got := strings.Count(before, "\n") + 1; got != i+1 {
			t.Fatalf("cycle %d: the volume lists %d files before the suspend, want %d:\n%s", i, got, i+1, before)
		}
		patchSandbox(t, ns, "cycles", `{"spec":{"operatingMode":"Suspended"}}`)
		waitPodGone(t, ns, "cycles")
		patchSandbox(t, ns, "cycles", `{"spec":{"operatingMode":"Running"}}`)
		waitSandboxReady(t, ns, "cycles")
		waitRunning(t, ns, "cycles")
		if after := kubectlExec(t, ns, "cycles", "sh", "-c", checksums); after != before {
			t.Fatalf("cycle %d: after resuming, the files on the volume differ from before the suspend:\nbefore:\n%s\nafter:\n%s", i, before, after)
		}
	}
	t.Logf("%d suspend/resume cycles under gVisor, every file byte-identical after each; %.1f s per cycle",
		cycles, time.Since(start).Seconds()/float64(cycles))
}
