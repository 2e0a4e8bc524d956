package devenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/node/install"
)

// TestNodeInstallOnLocalContainerdConfig: kubox-node install edits the local node's own
// containerd config (its commented "imports = []") as it does a stock node's, and uninstall
// gives it back byte for byte.
func TestNodeInstallOnLocalContainerdConfig(t *testing.T) {
	_, l, tools := testEnv()
	root := t.TempDir()
	rel := strings.TrimPrefix(filepath.Join(l.Etc, "containerd.toml"), "/")
	original := RenderContainerd(l, tools)
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, rel), []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	c := install.Containerd{HostRoot: root, Config: rel, RunscRoot: l.RunscRoot}
	if _, err := c.Install(); err != nil {
		t.Fatalf("install: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(original, "imports = []", `imports = ["/opt/kubox/etc/containerd-kubox-runsc.toml"]`, 1)
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("the local node's containerd config after install (-want +got):\n%s", diff)
	}
	if err := c.Uninstall(); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, rel)); string(got) != original {
		t.Errorf("uninstall did not restore the local node's containerd config:\n%s", cmp.Diff(original, string(got)))
	}
}
