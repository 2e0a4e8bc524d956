package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLocation(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    location
		wantErr string
	}{
		"sandbox path":           {in: "box:/work/a.txt", want: location{name: "box", path: "/work/a.txt"}},
		"relative sandbox path":  {in: "kubox-x7k2:out.json", want: location{name: "kubox-x7k2", path: "out.json"}},
		"dotted name":            {in: "a.b-c:/x", want: location{name: "a.b-c", path: "/x"}},
		"colon in remote path":   {in: "box:/a:b", want: location{name: "box", path: "/a:b"}},
		"stdio":                  {in: "-", want: location{stdio: true}},
		"local relative":         {in: "data.csv", want: location{path: "data.csv"}},
		"local absolute":         {in: "/tmp/data.csv", want: location{path: "/tmp/data.csv"}},
		"local with colon":       {in: "./box:/x", want: location{path: "./box:/x"}},
		"absolute with colon":    {in: "/tmp/a:b", want: location{path: "/tmp/a:b"}},
		"upper case is no name":  {in: "Box:/x", want: location{path: "Box:/x"}},
		"empty name is no name":  {in: ":/x", want: location{path: ":/x"}},
		"sandbox without a path": {in: "box:", wantErr: `"box:" names no file in box`},
		"empty":                  {in: "", wantErr: "an empty path"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseLocation(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseLocation(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(location{})); diff != "" {
				t.Errorf("parseLocation(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestWriteLocalReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(dst, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeLocal(dst, strings.NewReader("new contents"), 0o750); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "new contents" || fi.Mode().Perm() != 0o750 {
		t.Errorf("file = %q mode %v, want %q mode 0750", b, fi.Mode().Perm(), "new contents")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want only out.txt (no temporary file left)", len(entries))
	}
}

func TestWriteLocalKeepsTheOldFileOnFailure(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(dst, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeLocal(dst, failingReader{}, 0o644); err == nil {
		t.Fatal("writeLocal of a failing reader succeeded")
	}
	if b, _ := os.ReadFile(dst); string(b) != "old" {
		t.Errorf("file = %q after a failed copy, want the old contents", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want the temporary file removed", len(entries))
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }
