package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveSeeds are paths that try every way out of the root the hostile tree offers.
var resolveSeeds = []string{
	"", "/", ".", "..", "../", "/..", "a/../..", "a/b/c/../../../..", "a/file.txt", "/a/file.txt",
	"inlink/file.txt", "abslink/../abslink/file.txt", "a/b/uplink", "out", "out/secret", "absout/secret",
	"a/up/outside/secret", "a/deepout", "rootlink/etc/passwd", "dotdot/outside", "danglingout",
	"dangling", "loop1/x", "new/../../x", "a/file.txt/..", "a//b///c/./../..", "inlink/../out/secret",
	"a/b/c/../../up/outside", "\x00", "a/\x00/b", "%2e%2e/secret", "..\\outside", "a/..." + "/..",
}

// FuzzResolve checks that whatever path a client sends, a confined Root either refuses it with
// a typed error or resolves it to a path inside the root whose existing components are all real
// directories or files (no symbolic link left to follow), so nothing can lead outside.
//
//	go test ./internal/agent/files -run '^$' -fuzz FuzzResolve -fuzztime 60s
func FuzzResolve(f *testing.F) {
	for _, s := range resolveSeeds {
		f.Add(s)
	}
	tr := newTree(f).hostile()
	r := tr.root()
	f.Fuzz(func(t *testing.T, p string) {
		got, err := r.Resolve(p)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("Resolve(%q) failed with an untyped error: %v", p, err)
			}
			return
		}
		if got != tr.dir && !strings.HasPrefix(got, tr.dir+"/") {
			t.Fatalf("Resolve(%q) = %q, outside the root %q", p, got, tr.dir)
		}
		rel, _ := filepath.Rel(tr.dir, got)
		cur := tr.dir
		for _, elem := range strings.Split(rel, "/") {
			if elem == "." {
				continue
			}
			if elem == ".." {
				t.Fatalf("Resolve(%q) = %q, which has a .. component", p, got)
			}
			cur = filepath.Join(cur, elem)
			info, err := os.Lstat(cur)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				t.Fatalf("Resolve(%q) = %q: %v", p, got, err)
			}
			if info.Mode()&fs.ModeSymlink != 0 {
				t.Fatalf("Resolve(%q) = %q, which goes through the symbolic link %q", p, got, cur)
			}
		}
		if real, err := filepath.EvalSymlinks(got); err == nil && real != got {
			t.Fatalf("Resolve(%q) = %q, but the kernel resolves it to %q", p, got, real)
		}
	})
}
