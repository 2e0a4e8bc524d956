package install

import (
	"os"
	"path/filepath"
	"testing"
)

func imageDir(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	for _, name := range Binaries {
		must(t, os.WriteFile(filepath.Join(src, name), []byte("#!bin "+name), 0o755))
	}
	return src
}

func TestCopyBinaries(t *testing.T) {
	root, src := t.TempDir(), imageDir(t)
	for i, want := range []bool{true, false} {
		changed, err := CopyBinaries(root, src)
		if err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
		if changed != want {
			t.Errorf("install %d: changed = %v, want %v", i, changed, want)
		}
	}
	for _, name := range Binaries {
		st, err := os.Stat(filepath.Join(root, "opt/kubox/bin", name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o755 {
			t.Errorf("%s mode = %v, want 0755", name, st.Mode().Perm())
		}
		if got := read(t, root, "opt/kubox/bin/"+name); got != "#!bin "+name {
			t.Errorf("%s = %q", name, got)
		}
	}
}

// TestCopyBinariesRefusesLinks: a link planted at /opt/kubox/bin or at a binary is refused.
func TestCopyBinariesRefusesLinks(t *testing.T) {
	cases := map[string]struct{ link string }{
		"bin dir is a link": {link: "opt/kubox/bin"},
		"runsc is a link":   {link: "opt/kubox/bin/runsc"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root, src, outside := t.TempDir(), imageDir(t), t.TempDir()
			victim := filepath.Join(outside, "runsc")
			must(t, os.WriteFile(victim, []byte("secret"), 0o600))
			must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(tc.link)), 0o755))
			target := victim
			if tc.link == "opt/kubox/bin" {
				target = outside
			}
			must(t, os.Symlink(target, filepath.Join(root, tc.link)))
			if _, err := CopyBinaries(root, src); err == nil {
				t.Fatal("CopyBinaries followed a planted link, want an error")
			}
			if got := read(t, outside, "runsc"); got != "secret" {
				t.Errorf("victim = %q, want untouched", got)
			}
		})
	}
}

// TestRemoveBinaries: uninstall takes away what CopyBinaries put on the node, and nothing
// through a link planted at /opt/kubox/bin.
func TestRemoveBinaries(t *testing.T) {
	cases := map[string]struct {
		linkBin   bool
		wantError bool
	}{
		"installed":         {},
		"bin dir is a link": {linkBin: true, wantError: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			must(t, os.WriteFile(filepath.Join(outside, "runsc"), []byte("secret"), 0o600))
			if tc.linkBin {
				must(t, os.MkdirAll(filepath.Join(root, "opt/kubox"), 0o755))
				must(t, os.Symlink(outside, filepath.Join(root, "opt/kubox/bin")))
			} else if _, err := CopyBinaries(root, imageDir(t)); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ { // the second finds nothing to remove
				err := RemoveBinaries(root)
				if (err != nil) != tc.wantError {
					t.Fatalf("remove %d: %v, want error %v", i, err, tc.wantError)
				}
			}
			if got := read(t, outside, "runsc"); got != "secret" {
				t.Errorf("victim = %q, want untouched", got)
			}
			if tc.linkBin {
				return
			}
			for _, name := range Binaries {
				if _, err := os.Lstat(filepath.Join(root, "opt/kubox/bin", name)); !os.IsNotExist(err) {
					t.Errorf("%s still on the node: %v", name, err)
				}
			}
		})
	}
}
