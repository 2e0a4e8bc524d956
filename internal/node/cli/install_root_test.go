//go:build root

package cli

// Tests that need root (chroot): make test-root runs them.

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunOnHost: the restart command is looked up and run in the host's root filesystem, with
// the host's PATH, not in kubox-node's image (which has no shell).
func TestRunOnHost(t *testing.T) {
	root := t.TempDir()
	out, err := runOnHost(context.Background(), "/", []string{"sh", "-c", `echo "$PATH"; pwd`})
	if err != nil {
		t.Fatalf("runOnHost: %v: %s", err, out)
	}
	if diff := cmp.Diff(strings.TrimPrefix(hostPath, "PATH=")+"\n/\n", string(out)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if out, err := runOnHost(context.Background(), root, []string{"true"}); err == nil {
		t.Errorf("runOnHost in a root without a shell: nil (%s), want an error", out)
	}
}
