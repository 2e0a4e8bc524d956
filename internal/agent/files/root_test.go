package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveConfined(t *testing.T) {
	tr := newTree(t).hostile()
	r := tr.root()
	cases := map[string]struct {
		path    string
		want    string // relative to the root ("." for the root itself)
		wantErr error
	}{
		"empty is the root":                       {path: "", want: "."},
		"slash is the root":                       {path: "/", want: "."},
		"relative":                                {path: "a/file.txt", want: "a/file.txt"},
		"absolute is relative to the root":        {path: "/a/file.txt", want: "a/file.txt"},
		"dot-dot that stays inside":               {path: "a/b/../file.txt", want: "a/file.txt"},
		"repeated slashes and dots":               {path: "//a/./b//c/", want: "a/b/c"},
		"dot-dot above the root":                  {path: "../outside/secret", wantErr: ErrOutsideRoot},
		"dot-dot above the root from absolute":    {path: "/../outside/secret", wantErr: ErrOutsideRoot},
		"dot-dot above the root from a subdir":    {path: "a/../../outside", wantErr: ErrOutsideRoot},
		"relative link inside":                    {path: "inlink/file.txt", want: "a/file.txt"},
		"absolute link inside":                    {path: "abslink/file.txt", want: "a/file.txt"},
		"final link inside is followed":           {path: "a/b/uplink", want: "a/file.txt"},
		"relative link outside":                   {path: "out/secret", wantErr: ErrOutsideRoot},
		"absolute link outside":                   {path: "absout/secret", wantErr: ErrOutsideRoot},
		"final link outside":                      {path: "absout", wantErr: ErrOutsideRoot},
		"link to dot-dot in a parent":             {path: "a/up/outside/secret", wantErr: ErrOutsideRoot},
		"link whose target climbs out":            {path: "a/deepout", wantErr: ErrOutsideRoot},
		"link to slash":                           {path: "rootlink/etc/passwd", wantErr: ErrOutsideRoot},
		"link to dot-dot at the top":              {path: "dotdot", wantErr: ErrOutsideRoot},
		"new file through a link outside":         {path: "out/newfile", wantErr: ErrOutsideRoot},
		"dangling link inside is followed":        {path: "dangling", want: "missing-target"},
		"dangling link outside":                   {path: "danglingout", wantErr: ErrOutsideRoot},
		"link loop":                               {path: "loop1", wantErr: ErrInvalid},
		"new file":                                {path: "new/dir/file", want: "new/dir/file"},
		"dot-dot after a missing component":       {path: "missing/../a", wantErr: ErrNotFound},
		"file used as a directory":                {path: "a/file.txt/x", wantErr: ErrNotDirectory},
		"NUL byte":                                {path: "a/\x00b", wantErr: ErrInvalid},
		"name that only looks like the root name": {path: "/root-evil/x", want: "root-evil/x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := r.Resolve(tc.path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %v", tc.path, got, err, tc.wantErr)
				}
				var fe *Error
				if !errors.As(err, &fe) || fe.Hint == "" || !strings.Contains(err.Error(), strings.ReplaceAll(tc.path, "\x00", `\x00`)) {
					t.Errorf("error %q should be an *Error naming the path and saying what to do", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.path, err)
			}
			if want := filepath.Join(tr.dir, tc.want); got != want {
				t.Errorf("Resolve(%q) = %q, want %q", tc.path, got, want)
			}
		})
	}
	tr.secretIntact()
}

func TestResolveHost(t *testing.T) {
	tr := newTree(t).hostile()
	r, err := NewHostRoot(tr.dir + "/a")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	cases := map[string]struct {
		path    string
		want    string
		wantErr error
	}{
		"absolute":                           {path: tr.dir + "/a/file.txt", want: tr.dir + "/a/file.txt"},
		"relative to the working directory":  {path: "file.txt", want: tr.dir + "/a/file.txt"},
		"empty is the working directory":     {path: "", want: tr.dir + "/a"},
		"links may lead anywhere":            {path: tr.dir + "/absout/secret", want: tr.outside + "/secret"},
		"dot-dot above slash stays at slash": {path: "/../../" + tr.dir + "/a", want: tr.dir + "/a"},
		"a final link is followed":           {path: tr.dir + "/out", want: tr.outside},
		"link loop":                          {path: tr.dir + "/loop1", wantErr: ErrInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := r.Resolve(tc.path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %v", tc.path, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
	if r.Confined() || r.Dir() != "/" {
		t.Errorf("a host root is confined=%v with dir %q; want unconfined at /", r.Confined(), r.Dir())
	}
}

// TestRootThroughALink checks that an absolute link may spell the root the way it was configured,
// through a symbolic link, and still stay inside.
func TestRootThroughALink(t *testing.T) {
	tr := newTree(t).file("a/file.txt", "hello")
	alias := filepath.Join(tr.base, "alias")
	if err := os.Symlink(tr.dir, alias); err != nil {
		t.Fatal(err)
	}
	tr.link("viaalias", alias+"/a")
	r, err := NewRoot(alias)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	got, err := r.Resolve("viaalias/file.txt")
	if want := filepath.Join(tr.dir, "a/file.txt"); err != nil || got != want {
		t.Errorf("Resolve = %q, %v; want %q", got, err, want)
	}
	if r.Dir() != tr.dir {
		t.Errorf("Dir() = %q, want the link's target %q", r.Dir(), tr.dir)
	}
}

func TestNewRootErrors(t *testing.T) {
	tr := newTree(t).file("f", "x")
	cases := map[string]string{
		"empty":         "",
		"missing":       filepath.Join(tr.dir, "missing"),
		"not directory": filepath.Join(tr.dir, "f"),
	}
	for name, dir := range cases {
		t.Run(name, func(t *testing.T) {
			if r, err := NewRoot(dir); err == nil {
				_ = r.Close()
				t.Fatalf("NewRoot(%q) succeeded", dir)
			}
		})
	}
	if _, err := NewHostRoot("relative/dir"); err == nil {
		t.Error("NewHostRoot accepted a relative working directory")
	}
}

// TestSwappedComponentCannotEscape replays the check-then-use race: a directory on the resolved
// path is replaced by a link to the outside after resolution and before the operation. The
// operation, which goes through the os.Root, must fail rather than reach the outside.
func TestSwappedComponentCannotEscape(t *testing.T) {
	tr := newTree(t).file("a/secret", "inside")
	r := tr.root()
	tgt, err := r.resolve("read", "a/secret", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(tr.dir, "a")); err != nil {
		t.Fatal(err)
	}
	tr.link("a", "{outside}")
	f, err := r.fs.Open(tgt.rel)
	if err == nil {
		b := make([]byte, 16)
		n, _ := f.Read(b)
		_ = f.Close()
		t.Fatalf("opened %q through a swapped link and read %q", tgt.rel, b[:n])
	}
	for name, op := range map[string]func() error{
		"write":  func() error { _, err := r.writeFile("write", tgt, strings.NewReader("x"), WriteOptions{}); return err },
		"remove": func() error { return r.fs.Remove(tgt.rel) },
		"rename": func() error { return r.fs.Rename(tgt.rel, "stolen") },
	} {
		if err := op(); err == nil {
			t.Errorf("%s through a swapped link succeeded", name)
		}
	}
	tr.secretIntact()
}
