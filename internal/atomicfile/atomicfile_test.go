package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWholly(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(dst, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(dst, strings.NewReader("new content"), 0o750); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	fi, _ := os.Stat(dst)
	if err != nil || string(got) != "new content" || fi.Mode().Perm() != 0o750 {
		t.Errorf("after Write: %q, mode %v, %v; want the new content with mode 0750", got, fi.Mode().Perm(), err)
	}
	assertOnly(t, filepath.Dir(dst), "f")
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("the source broke") }

func TestWriteFailureKeepsTheOldFile(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(dst, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Write(dst, io.MultiReader(strings.NewReader("part"), failingReader{}), 0o644)
	if err == nil || !strings.Contains(err.Error(), "the source broke") {
		t.Fatalf("Write from a failing reader = %v; want its error", err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "old" {
		t.Errorf("dst = %q after a failed Write; want the old content", got)
	}
	assertOnly(t, filepath.Dir(dst), "f")
}

// assertOnly fails unless dir holds exactly the file name: no temporary file is left behind.
func assertOnly(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != name {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v; want only %s", dir, names, name)
	}
}
