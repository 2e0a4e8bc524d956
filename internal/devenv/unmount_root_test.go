//go:build linux && root

// Tests that mount file systems need root, which the unit tier (make test-unit) must not; `make
// test-root` runs them (and the rest of the package): go test -tags root ./internal/devenv

package devenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestUnmountStackedMounts: a path mounted twice (as gVisor's shim does with null-netns) is
// unmounted twice, so nothing is left below the folder.
func TestUnmountStackedMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts tmpfs and needs root: run it with make test-root, as root")
	}
	dir := t.TempDir()
	point := filepath.Join(dir, "runsc", "null-netns")
	if err := os.MkdirAll(point, 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := syscall.Mount("tmpfs", point, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatalf("mount tmpfs on %s: %v", point, err)
		}
	}
	t.Cleanup(func() { _ = Unmount(dir) })
	if err := Unmount(dir); err != nil {
		t.Fatal(err)
	}
	mounts, err := readMounts()
	if err != nil {
		t.Fatal(err)
	}
	if left := MountsUnder(mounts, dir); len(left) != 0 {
		t.Errorf("still mounted: %v", left)
	}
}
