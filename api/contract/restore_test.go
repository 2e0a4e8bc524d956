package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShimPatchAgrees reads kubox's patch to gVisor's shim, which cannot import this package, and
// fails when its copies of the restore contract differ from the values here.
func TestShimPatchAgrees(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "hack", "tools", "gvisor", "patches", "restore-into-pod.patch"))
	if err != nil {
		t.Fatalf("reading the shim's patch: %v", err)
	}
	patch := string(b)
	cases := map[string]string{
		"the restore annotation":           `kuboxRestoreImageAnnotation = "` + RestoreImageAnnotation + `"`,
		"the manifest MAC's domain":        `"` + SnapshotManifestDomain + `\n%s\n%s\n"`,
		"the annotation's reserved prefix": RestoreAnnotationPrefix,
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(patch, want) {
				t.Errorf("restore-into-pod.patch does not contain %s %q: change the patch and api/contract together", name, want)
			}
		})
	}
}
