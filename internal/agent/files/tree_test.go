package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tree builds a directory tree for a test: a root directory (what the Root confines to) and,
// beside it, an outside directory holding a secret that no path may reach.
type tree struct {
	t       testing.TB
	base    string
	dir     string
	outside string
}

func newTree(t testing.TB) *tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := &tree{t: t, base: base, dir: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{tr.dir, tr.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tr.outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	return tr
}

// expand replaces {root} and {outside} in s with the tree's directories.
func (tr *tree) expand(s string) string {
	return strings.NewReplacer("{root}", tr.dir, "{outside}", tr.outside).Replace(s)
}

// file writes a file at rel (under the root) with content.
func (tr *tree) file(rel, content string) *tree {
	tr.t.Helper()
	p := filepath.Join(tr.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
	return tr
}

// mkdir creates the directory rel (and its parents) under the root.
func (tr *tree) mkdir(rel string) *tree {
	tr.t.Helper()
	if err := os.MkdirAll(filepath.Join(tr.dir, rel), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	return tr
}

// link creates a symbolic link at rel pointing to target ({root} and {outside} expanded).
func (tr *tree) link(rel, target string) *tree {
	tr.t.Helper()
	p := filepath.Join(tr.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Symlink(tr.expand(target), p); err != nil {
		tr.t.Fatal(err)
	}
	return tr
}

// hostile adds the links the resolution tests and the fuzz test try to escape through.
func (tr *tree) hostile() *tree {
	return tr.
		file("a/file.txt", "hello").
		mkdir("a/b/c").
		link("inlink", "a").
		link("abslink", "{root}/a").
		link("a/b/uplink", "../file.txt").
		link("out", "../outside").
		link("absout", "{outside}").
		link("a/up", "../..").
		link("a/deepout", "b/../../../outside/secret").
		link("loop1", "loop2").
		link("loop2", "loop1").
		link("dangling", "missing-target").
		link("danglingout", "../outside/newfile").
		link("rootlink", "/").
		link("dotdot", "..")
}

// root opens a confined Root on the tree, closed when the test ends.
func (tr *tree) root() *Root {
	tr.t.Helper()
	r, err := NewRoot(tr.dir)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.t.Cleanup(func() { _ = r.Close() })
	return r
}

// read returns the content of the file rel under the root.
func (tr *tree) read(rel string) string {
	tr.t.Helper()
	b, err := os.ReadFile(filepath.Join(tr.dir, rel))
	if err != nil {
		tr.t.Fatal(err)
	}
	return string(b)
}

// exists reports whether rel exists under the root (without following a final link).
func (tr *tree) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(tr.dir, rel))
	return err == nil
}

// secretIntact fails the test unless the outside directory holds only its untouched secret.
func (tr *tree) secretIntact() {
	tr.t.Helper()
	entries, err := os.ReadDir(tr.outside)
	if err != nil {
		tr.t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "secret" {
		tr.t.Errorf("the outside directory changed: %v", entries)
	}
	if b, err := os.ReadFile(filepath.Join(tr.outside, "secret")); err != nil || string(b) != "secret" {
		tr.t.Errorf("the outside secret changed: %q, %v", b, err)
	}
}
