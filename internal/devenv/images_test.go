package devenv

import (
	"archive/tar"
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestLayerTarIsReproducible(t *testing.T) {
	spec := BusyboxSpec([]byte("elf"), []string{"sh", "ls", "busybox"})
	a, err := LayerTar(spec.Files)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LayerTar(spec.Files)
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same layer differ")
	}
	links := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
		}
	}
	if diff := cmp.Diff(map[string]string{"bin/sh": "busybox", "bin/ls": "busybox"}, links); diff != "" {
		t.Errorf("applet links (-want +got):\n%s", diff)
	}
}

func TestWriteImage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pause.tar")
	if err := WriteImage(PauseSpec([]byte("binary")), path); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	if len(layers) != 1 || cf.OS != "linux" || !cmp.Equal(cf.Config.Entrypoint, []string{"/pause"}) {
		t.Errorf("image: %d layers, os %q, entrypoint %v", len(layers), cf.OS, cf.Config.Entrypoint)
	}
}
