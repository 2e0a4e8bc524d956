package files

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStat(t *testing.T) {
	tr := newTree(t).hostile()
	r := tr.root()
	cases := map[string]struct {
		path       string
		wantPath   string
		wantType   EntryType
		wantTarget string
		wantErr    error
	}{
		"file":                           {path: "a/file.txt", wantPath: "/a/file.txt", wantType: TypeFile},
		"directory":                      {path: "a/b", wantPath: "/a/b", wantType: TypeDirectory},
		"root":                           {path: "/", wantPath: "/", wantType: TypeDirectory},
		"through a link in a parent":     {path: "inlink/file.txt", wantPath: "/a/file.txt", wantType: TypeFile},
		"final link is not followed":     {path: "inlink", wantPath: "/inlink", wantType: TypeSymlink, wantTarget: "a"},
		"link outside is described only": {path: "absout", wantPath: "/absout", wantType: TypeSymlink, wantTarget: tr.outside},
		"missing":                        {path: "a/nope", wantErr: ErrNotFound},
		"through a link outside":         {path: "out/secret", wantErr: ErrOutsideRoot},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := r.Stat(tc.path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Stat(%q) = %+v, %v; want %v", tc.path, e, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Path != tc.wantPath || e.Type != tc.wantType || e.SymlinkTarget != tc.wantTarget {
				t.Errorf("Stat(%q) = %+v; want path %q, type %v, target %q", tc.path, e, tc.wantPath, tc.wantType, tc.wantTarget)
			}
		})
	}
	e, err := r.Stat("a/file.txt")
	if err != nil || e.Size != 5 || e.Mode != 0o644 || e.Name != "file.txt" || e.ModTime.IsZero() {
		t.Errorf("Stat(a/file.txt) = %+v, %v; want size 5, mode 0644, name file.txt and a time", e, err)
	}
}

func TestList(t *testing.T) {
	tr := newTree(t).file("d/x", "1").file("d/sub/y", "22").file("d/sub/deeper/z", "333").link("d/l", "sub").file("other", "")
	r := tr.root()
	cases := map[string]struct {
		path    string
		depth   int
		want    []string
		wantErr error
	}{
		"depth 0 lists one level":    {path: "d", depth: 0, want: []string{"/d/l symlink", "/d/sub directory", "/d/x file"}},
		"depth 1 lists one level":    {path: "/d", depth: 1, want: []string{"/d/l symlink", "/d/sub directory", "/d/x file"}},
		"depth 2 enters subdirs":     {path: "d", depth: 2, want: []string{"/d/l symlink", "/d/sub directory", "/d/sub/deeper directory", "/d/sub/y file", "/d/x file"}},
		"deep enough for everything": {path: "d", depth: 10, want: []string{"/d/l symlink", "/d/sub directory", "/d/sub/deeper directory", "/d/sub/deeper/z file", "/d/sub/y file", "/d/x file"}},
		"a final link is followed":   {path: "d/l", depth: 1, want: []string{"/d/sub/deeper directory", "/d/sub/y file"}},
		"a file is not a directory":  {path: "other", wantErr: ErrNotDirectory},
		"missing":                    {path: "nope", wantErr: ErrNotFound},
		"outside":                    {path: "..", wantErr: ErrOutsideRoot},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			entries, err := r.List(tc.path, tc.depth)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("List(%q) = %v, %v; want %v", tc.path, entries, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Path+" "+e.Type.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("List(%q, %d) (-want +got):\n%s", tc.path, tc.depth, diff)
			}
		})
	}
}

func TestMakeDir(t *testing.T) {
	cases := map[string]struct {
		path     string
		parents  bool
		mode     fs.FileMode
		wantMode fs.FileMode
		wantErr  error
	}{
		"new":                                {path: "new", wantMode: DefaultDirMode},
		"exact mode despite umask":           {path: "new", mode: 0o777, wantMode: 0o777},
		"setgid":                             {path: "new", mode: 0o750 | fs.ModeSetgid, wantMode: 0o750 | fs.ModeSetgid},
		"with parents":                       {path: "p/q/r", parents: true, mode: 0o700, wantMode: 0o700},
		"existing with parents is fine":      {path: "dir", parents: true, wantMode: DefaultDirMode},
		"existing without parents":           {path: "dir", wantErr: ErrExists},
		"missing parent without parents":     {path: "x/y", wantErr: ErrNotFound},
		"a file in the way":                  {path: "file", parents: true, wantErr: ErrExists},
		"a file as a parent":                 {path: "file/sub", parents: true, wantErr: ErrNotDirectory},
		"outside":                            {path: "../escape", parents: true, wantErr: ErrOutsideRoot},
		"outside through a link":             {path: "out/escape", parents: true, wantErr: ErrOutsideRoot},
		"through a link inside":              {path: "dirlink/sub", wantMode: DefaultDirMode},
		"a mode that is not permission bits": {path: "new", mode: fs.ModeDir | 0o755, wantErr: ErrInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newTree(t).mkdir("dir").file("file", "").link("out", "{outside}").link("dirlink", "dir")
			r := tr.root()
			e, err := r.MakeDir(tc.path, tc.parents, tc.mode)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("MakeDir(%q) = %+v, %v; want %v", tc.path, e, err, tc.wantErr)
				}
				tr.secretIntact()
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Type != TypeDirectory || e.Mode != tc.wantMode {
				t.Errorf("MakeDir(%q) = %+v; want a directory with mode %v", tc.path, e, tc.wantMode)
			}
			host, _ := r.Resolve(tc.path)
			info, err := os.Stat(host)
			if err != nil || !info.IsDir() || info.Mode()&modeBits != tc.wantMode {
				t.Errorf("on disk: %v, %v; want a directory with mode %v", info.Mode(), err, tc.wantMode)
			}
		})
	}
}

func TestMove(t *testing.T) {
	cases := map[string]struct {
		src, dst  string
		overwrite bool
		wantErr   error
		// want lists what must exist afterwards (path under the root -> content; "" for a directory).
		want map[string]string
		// gone lists what must not exist afterwards.
		gone []string
	}{
		"file":                                  {src: "f", dst: "g", want: map[string]string{"g": "f"}, gone: []string{"f"}},
		"into a subdirectory by full path":      {src: "f", dst: "d/f", want: map[string]string{"d/f": "f"}, gone: []string{"f"}},
		"directory":                             {src: "d", dst: "e", want: map[string]string{"e/in": "in"}, gone: []string{"d"}},
		"existing destination is kept":          {src: "f", dst: "other", wantErr: ErrExists, want: map[string]string{"f": "f", "other": "other"}},
		"existing destination with overwrite":   {src: "f", dst: "other", overwrite: true, want: map[string]string{"other": "f"}, gone: []string{"f"}},
		"a symbolic link moves itself":          {src: "link", dst: "link2", want: map[string]string{"link2": "f", "f": "f"}, gone: []string{"link"}},
		"onto a non-empty directory":            {src: "empty", dst: "d", overwrite: true, wantErr: ErrNotEmpty},
		"onto an empty directory":               {src: "d", dst: "empty", overwrite: true, want: map[string]string{"empty/in": "in"}},
		"a directory into itself":               {src: "d", dst: "d/sub", wantErr: ErrInvalid},
		"missing source":                        {src: "nope", dst: "x", wantErr: ErrNotFound},
		"missing destination parent":            {src: "f", dst: "no/such/dir", wantErr: ErrNotFound, want: map[string]string{"f": "f"}},
		"to the outside":                        {src: "f", dst: "../stolen", wantErr: ErrOutsideRoot, want: map[string]string{"f": "f"}},
		"to the outside through a link":         {src: "f", dst: "out/stolen", wantErr: ErrOutsideRoot, want: map[string]string{"f": "f"}},
		"from the outside":                      {src: "out/secret", dst: "mine", wantErr: ErrOutsideRoot},
		"a link that points outside is movable": {src: "out", dst: "out2", gone: []string{"out"}},
		"the root":                              {src: "/", dst: "x", wantErr: ErrInvalid},
		"onto the root":                         {src: "f", dst: "/", overwrite: true, wantErr: ErrInvalid},
		"to itself":                             {src: "f", dst: "/f", want: map[string]string{"f": "f"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newTree(t).file("f", "f").file("other", "other").file("d/in", "in").mkdir("empty").
				link("link", "f").link("out", "{outside}")
			r := tr.root()
			_, err := r.Move(tc.src, tc.dst, tc.overwrite)
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Move(%q, %q) = %v; want %v", tc.src, tc.dst, err, tc.wantErr)
			}
			if tc.wantErr == nil && err != nil {
				t.Fatalf("Move(%q, %q): %v", tc.src, tc.dst, err)
			}
			for rel, content := range tc.want {
				if got := tr.read(rel); got != content {
					t.Errorf("%s holds %q, want %q", rel, got, content)
				}
			}
			for _, rel := range tc.gone {
				if tr.exists(rel) {
					t.Errorf("%s still exists", rel)
				}
			}
			tr.secretIntact()
		})
	}
}

// TestMoveAcross checks the copy-then-remove path that moves between file systems take.
func TestMoveAcross(t *testing.T) {
	tr := newTree(t).file("f", "content").file("other", "old").mkdir("d")
	r := tr.root()
	if err := os.Chmod(filepath.Join(tr.dir, "f"), 0o751); err != nil {
		t.Fatal(err)
	}
	src, _ := r.resolve("move", "f", false)
	dst, _ := r.resolve("move", "other", false)
	if err := r.moveAcross(src, dst, false); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("moveAcross without overwrite onto an existing file = %v, want EEXIST", err)
	}
	if err := r.moveAcross(src, dst, true); err != nil {
		t.Fatal(err)
	}
	if tr.exists("f") || tr.read("other") != "content" {
		t.Errorf("after the move: f exists=%v, other=%q; want f gone and other=content", tr.exists("f"), tr.read("other"))
	}
	if info, _ := os.Stat(filepath.Join(tr.dir, "other")); info.Mode().Perm() != 0o751 {
		t.Errorf("moved file has mode %v, want the source's 0751", info.Mode())
	}
	dir, _ := r.resolve("move", "d", false)
	if err := r.moveAcross(dir, src, false); !errors.Is(err, ErrInvalid) {
		t.Errorf("moveAcross of a directory = %v, want ErrInvalid", err)
	}
}

func TestRemove(t *testing.T) {
	cases := map[string]struct {
		path      string
		recursive bool
		wantErr   error
		gone      []string
		kept      []string
	}{
		"file":                            {path: "f", gone: []string{"f"}},
		"empty directory":                 {path: "empty", gone: []string{"empty"}},
		"non-empty directory":             {path: "d", wantErr: ErrNotEmpty, kept: []string{"d/sub/in"}},
		"non-empty directory recursively": {path: "d", recursive: true, gone: []string{"d"}},
		"a link, not its target":          {path: "link", gone: []string{"link"}, kept: []string{"d/sub/in"}},
		"a link to the outside":           {path: "out", gone: []string{"out"}},
		"through a link to the outside":   {path: "out/secret", wantErr: ErrOutsideRoot},
		"missing":                         {path: "nope", wantErr: ErrNotFound},
		"outside":                         {path: "../outside/secret", recursive: true, wantErr: ErrOutsideRoot},
		"the root keeps itself":           {path: "/", recursive: true, gone: []string{"f", "d", "empty", "link", "out"}, kept: []string{"."}},
		"the root without recursive":      {path: "/", wantErr: ErrNotEmpty, kept: []string{"f"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newTree(t).file("f", "f").file("d/sub/in", "in").mkdir("empty").link("link", "d/sub").link("out", "{outside}")
			r := tr.root()
			err := r.Remove(tc.path, tc.recursive)
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Remove(%q) = %v; want %v", tc.path, err, tc.wantErr)
			}
			if tc.wantErr == nil && err != nil {
				t.Fatalf("Remove(%q): %v", tc.path, err)
			}
			for _, rel := range tc.gone {
				if tr.exists(rel) {
					t.Errorf("%s still exists", rel)
				}
			}
			for _, rel := range tc.kept {
				if !tr.exists(rel) {
					t.Errorf("%s was removed", rel)
				}
			}
			tr.secretIntact()
		})
	}
}

func TestRemoveHostRootRefusesSlash(t *testing.T) {
	r, err := NewHostRoot("/")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if err := r.Remove("/", true); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Remove(/) on a host root = %v, want ErrInvalid", err)
	}
}

// failingReader returns some data and then fails, as a client that disconnects mid-upload.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := min(len(p), f.n)
	for i := range p[:n] {
		p[i] = 'x'
	}
	f.n -= n
	return n, nil
}

func TestWriteFile(t *testing.T) {
	mode := func(m fs.FileMode) *fs.FileMode { return &m }
	cases := map[string]struct {
		path     string
		body     io.Reader
		mode     *fs.FileMode
		wantErr  error
		wantRel  string // where the content lands
		wantMode fs.FileMode
	}{
		"new file gets 0644":                 {path: "new", body: strings.NewReader("data"), wantRel: "new", wantMode: 0o644},
		"new file with a mode":               {path: "new", body: strings.NewReader("data"), mode: mode(0o600), wantRel: "new", wantMode: 0o600},
		"replacing keeps the mode":           {path: "exec", body: strings.NewReader("data"), wantRel: "exec", wantMode: 0o755},
		"replacing with a mode":              {path: "exec", body: strings.NewReader("data"), mode: mode(0o640), wantRel: "exec", wantMode: 0o640},
		"setuid":                             {path: "new", body: strings.NewReader("data"), mode: mode(0o755 | fs.ModeSetuid), wantRel: "new", wantMode: 0o755 | fs.ModeSetuid},
		"parents are created":                {path: "p/q/new", body: strings.NewReader("data"), wantRel: "p/q/new", wantMode: 0o644},
		"through a final link":               {path: "link", body: strings.NewReader("data"), wantRel: "exec", wantMode: 0o755},
		"through a dangling link":            {path: "dangling", body: strings.NewReader("data"), wantRel: "target", wantMode: 0o644},
		"onto a directory":                   {path: "dir", body: strings.NewReader("data"), wantErr: ErrIsDirectory},
		"onto the root":                      {path: "/", body: strings.NewReader("data"), wantErr: ErrIsDirectory},
		"outside":                            {path: "../outside/secret", body: strings.NewReader("data"), wantErr: ErrOutsideRoot},
		"through a link outside":             {path: "out/secret", body: strings.NewReader("data"), wantErr: ErrOutsideRoot},
		"a final link outside":               {path: "outfile", body: strings.NewReader("data"), wantErr: ErrOutsideRoot},
		"an upload cut short":                {path: "exec", body: &failingReader{n: 1 << 20}, wantErr: ErrInvalid},
		"a mode that is not permission bits": {path: "new", body: strings.NewReader(""), mode: mode(fs.ModeDir), wantErr: ErrInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tr := newTree(t).file("exec", "old").mkdir("dir").link("link", "exec").link("dangling", "target").
				link("out", "{outside}").link("outfile", "{outside}/secret")
			if err := os.Chmod(filepath.Join(tr.dir, "exec"), 0o755); err != nil {
				t.Fatal(err)
			}
			r := tr.root()
			e, err := r.WriteFile(tc.path, tc.body, WriteOptions{Mode: tc.mode})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("WriteFile(%q) = %+v, %v; want %v", tc.path, e, err, tc.wantErr)
				}
				if got := tr.read("exec"); got != "old" {
					t.Errorf("a failed write changed exec to %q", got)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if got := tr.read(tc.wantRel); got != "data" {
					t.Errorf("%s holds %q, want data", tc.wantRel, got)
				}
				info, _ := os.Lstat(filepath.Join(tr.dir, tc.wantRel))
				if info.Mode()&modeBits != tc.wantMode || e.Mode != tc.wantMode || e.Size != 4 {
					t.Errorf("mode on disk %v, entry %+v; want mode %v, size 4", info.Mode(), e, tc.wantMode)
				}
			}
			assertNoTempFiles(t, tr.dir)
			tr.secretIntact()
		})
	}
}

// assertNoTempFiles fails if an upload's temporary file was left anywhere under dir.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestOpen(t *testing.T) {
	tr := newTree(t).file("f", "content").mkdir("d").link("l", "f").link("out", "{outside}/secret")
	if err := syscall.Mkfifo(filepath.Join(tr.dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := tr.root()
	f, e, err := r.Open("l")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	_ = f.Close()
	if string(b) != "content" || e.Path != "/f" || e.Type != TypeFile {
		t.Errorf("Open(l) read %q with entry %+v; want the content of /f", b, e)
	}
	f, e, err = r.Open("d")
	if err != nil || e.Type != TypeDirectory {
		t.Errorf("Open(d) = %+v, %v; want a directory", e, err)
	}
	if f != nil {
		_ = f.Close()
	}
	if _, _, err := r.Open("fifo"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(fifo) = %v, want ErrInvalid without blocking", err)
	}
	if _, _, err := r.Open("out"); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("Open(out) = %v, want ErrOutsideRoot", err)
	}
}

func TestStatusAndCode(t *testing.T) {
	cases := map[string]struct {
		err        error
		wantStatus int
		wantCode   string
	}{
		"outside":    {newError("read", "p", ErrOutsideRoot, nil), 403, "permission_denied"},
		"permission": {fromOS("read", "p", syscall.EACCES), 403, "permission_denied"},
		"read-only":  {fromOS("write", "p", syscall.EROFS), 403, "permission_denied"},
		"not found":  {fromOS("read", "p", syscall.ENOENT), 404, "not_found"},
		"exists":     {fromOS("mkdir", "p", syscall.EEXIST), 409, "already_exists"},
		"not empty":  {fromOS("remove", "p", syscall.ENOTEMPTY), 409, "failed_precondition"},
		"not dir":    {fromOS("list", "p", syscall.ENOTDIR), 409, "failed_precondition"},
		"is dir":     {fromOS("read", "p", syscall.EISDIR), 400, "failed_precondition"},
		"loop":       {fromOS("read", "p", syscall.ELOOP), 400, "invalid_argument"},
		"no space":   {fromOS("write", "p", syscall.ENOSPC), 413, "resource_exhausted"},
		"quota":      {fromOS("write", "p", syscall.EDQUOT), 413, "resource_exhausted"},
		"other":      {fromOS("read", "p", syscall.EIO), 500, "internal"},
		"not ours":   {errors.New("boom"), 500, "internal"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := StatusOf(tc.err); got != tc.wantStatus {
				t.Errorf("StatusOf(%v) = %d, want %d", tc.err, got, tc.wantStatus)
			}
			if got := CodeOf(tc.err).String(); got != tc.wantCode {
				t.Errorf("CodeOf(%v) = %s, want %s", tc.err, got, tc.wantCode)
			}
		})
	}
}
