package devenv

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imageEntries reads the image tarball at path and returns its config and, for each entry of
// its single layer, the mode and contents by name.
func imageEntries(t *testing.T, path string) (*v1.ConfigFile, map[string]string) {
	t.Helper()
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	entries := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return cf, entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		entries[h.Name] = os.FileMode(h.Mode).String() + " " + string(data)
	}
}

func TestComponentSpecRunsAsNonRoot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "controller.tar")
	if err := WriteImage(ComponentSpec("kubox-controller", ControllerImage, []byte("elf")), path); err != nil {
		t.Fatal(err)
	}
	cf, entries := imageEntries(t, path)
	if cf.Config.User != "65532:65532" || !cmp.Equal(cf.Config.Entrypoint, []string{"/kubox-controller"}) || cf.OS != "linux" {
		t.Errorf("config: user %q, entrypoint %v, os %q; want 65532:65532, [/kubox-controller], linux",
			cf.Config.User, cf.Config.Entrypoint, cf.OS)
	}
	want := map[string]string{
		"etc/":             "-rwxr-xr-x ",
		"etc/passwd":       "-rw-r--r-- root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n",
		"etc/group":        "-rw-r--r-- root:x:0:\nnonroot:x:65532:\n",
		"kubox-controller": "-rwxr-xr-x elf",
	}
	if diff := cmp.Diff(want, entries); diff != "" {
		t.Errorf("layer (-want +got):\n%s", diff)
	}
}

func TestGoBuildArgs(t *testing.T) {
	cases := map[string]struct {
		version string
		want    []string
	}{
		"the build info's version": {
			want: []string{"build", "-trimpath", "-ldflags=-s -w", "-o", "/out/kubox-router", "./cmd/kubox-router"},
		},
		"a version linked in": {
			version: "v0.0.0-upgrade",
			want: []string{"build", "-trimpath",
				"-ldflags=-s -w -X github.com/kubox-dev/kubox/internal/version.gitVersion=v0.0.0-upgrade",
				"-o", "/out/kubox-router", "./cmd/kubox-router"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, GoBuildArgs("kubox-router", tc.version, "/out/kubox-router")); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildComponentImage builds a tiny module's command the way the component images are
// built: static, cached by content, a new tarball for a new tag or version.
func TestBuildComponentImage(t *testing.T) {
	repo, cache := t.TempDir(), t.TempDir()
	for path, data := range map[string]string{
		"go.mod":            "module example.com/hello\n\ngo 1.22\n",
		"cmd/hello/main.go": "package main\n\nimport \"net/http\"\n\nfunc main() { _ = http.ListenAndServe(\":0\", nil) }\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, path), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img := ComponentImage{Name: "hello", Tag: "kubox.local/hello:dev"}
	first, err := BuildComponentImage(repo, cache, img)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, filepath.Join(cache, "hello", "hello-")) {
		t.Errorf("tarball %s is not in the cache folder %s/hello", first, cache)
	}
	cf, entries := imageEntries(t, first)
	if cf.Config.User != "65532:65532" || !strings.HasPrefix(entries["hello"], "-rwxr-xr-x \x7fELF") {
		t.Fatalf("image: user %q, /hello %.20q", cf.Config.User, entries["hello"])
	}
	bin := filepath.Join(t.TempDir(), "hello")
	if err := os.WriteFile(bin, []byte(strings.TrimPrefix(entries["hello"], "-rwxr-xr-x ")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckStatic(bin); err != nil {
		t.Errorf("the image's binary: %v", err)
	}
	again, err := BuildComponentImage(repo, cache, img)
	if err != nil || again != first {
		t.Errorf("an unchanged build gave %s (%v), want the cached %s", again, err, first)
	}
	retagged, err := BuildComponentImage(repo, cache, ComponentImage{Name: "hello", Tag: "kubox.local/hello:other"})
	if err != nil || retagged == first {
		t.Errorf("another tag gave %s (%v); want a tarball of its own", retagged, err)
	}
	runsc := filepath.Join(t.TempDir(), "runsc")
	if err := os.WriteFile(runsc, []byte("runsc 1"), 0o755); err != nil {
		t.Fatal(err)
	}
	withBin := ComponentImage{Name: "hello", Tag: "kubox.local/hello:dev", Files: map[string]string{"opt/kubox-node/bin/runsc": runsc}}
	carrying, err := BuildComponentImage(repo, cache, withBin)
	if err != nil || carrying == first {
		t.Fatalf("an image carrying runsc gave %s (%v); want a tarball of its own", carrying, err)
	}
	if _, entries := imageEntries(t, carrying); entries["opt/kubox-node/bin/runsc"] != "-rwxr-xr-x runsc 1" {
		t.Errorf("the image's /opt/kubox-node/bin/runsc = %q, want runsc 1, mode 0755", entries["opt/kubox-node/bin/runsc"])
	}
	if err := os.WriteFile(runsc, []byte("runsc 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if changed, err := BuildComponentImage(repo, cache, withBin); err != nil || changed == carrying {
		t.Errorf("a changed runsc gave %s (%v); want a new tarball", changed, err)
	}
	left, _ := filepath.Glob(filepath.Join(cache, "hello", "hello-build-*"))
	if len(left) != 0 {
		t.Errorf("build folders left behind: %v", left)
	}
}
