package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCopyExecutable(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	content := bytes.Repeat([]byte("agent"), 100000)
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "bin", "nested", "kubox-agent")
	if err := copyExecutable(src, dest); err != nil {
		t.Fatalf("copyExecutable: %v", err)
	}
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("installed copy differs from the source (%d vs %d bytes, %v)", len(got), len(content), err)
	}
	if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(dest))
	if len(entries) != 1 {
		t.Errorf("files left next to the binary: %v", entries)
	}
	if err := copyExecutable(filepath.Join(dir, "missing"), dest); err == nil {
		t.Error("copying a missing file succeeded")
	}
}
