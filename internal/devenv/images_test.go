package devenv

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	cf, _ := imageEntries(t, path) // one layer, or it fails
	if cf.OS != "linux" || !cmp.Equal(cf.Config.Entrypoint, []string{"/pause"}) {
		t.Errorf("image: os %q, entrypoint %v", cf.OS, cf.Config.Entrypoint)
	}
}

func TestPythonRootfsArgs(t *testing.T) {
	args := PythonRootfs.MmdebstrapArgs("/out/rootfs.tar")
	want := []string{"--mode=root", "--format=tar", "--variant=essential", "--include=python3,usr-is-merged"}
	if diff := cmp.Diff(want, args[:len(want)]); diff != "" {
		t.Errorf("leading args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bookworm", "/out/rootfs.tar"}, args[len(args)-2:]); diff != "" {
		t.Errorf("suite and target (-want +got):\n%s", diff)
	}
	hook := `--customize-hook=chroot "$1" dpkg --purge usrmerge libfile-find-rule-perl libnumber-compare-perl ` +
		`libtext-glob-perl perl libperl5.36 perl-modules-5.36`
	if !contains(args, hook) || !contains(args, "--dpkgopt=path-exclude=/usr/share/doc/*") {
		t.Errorf("args lack the purge hook or the doc exclusion: %q", args)
	}
}

func TestFilterTarDropsDevicesAndHostFiles(t *testing.T) {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	for _, h := range []*tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./dev/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./dev/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		{Name: "./dev/loop0", Typeflag: tar.TypeBlock, Mode: 0o660, Devmajor: 7},
		{Name: "./run/initctl", Typeflag: tar.TypeFifo, Mode: 0o600},
		{Name: "./etc/hostname", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "./etc/resolv.conf", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "./etc/hosts", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "./bin", Typeflag: tar.TypeSymlink, Linkname: "usr/bin"},
		{Name: "./usr/bin/python3", Typeflag: tar.TypeSymlink, Linkname: "python3.11"},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte("data")[:h.Size])
	}
	_ = tw.Close()
	var out bytes.Buffer
	if err := FilterTar(&in, &out, KeepRootfsEntry); err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		names = append(names, h.Name+":"+string(data))
	}
	want := []string{"./:", "./dev/:", "./etc/hosts:data", "./bin:", "./usr/bin/python3:"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestWritePythonImage(t *testing.T) {
	tmp := t.TempDir()
	layer, path := filepath.Join(tmp, "layer.tar"), filepath.Join(tmp, "python.tar")
	data, err := LayerTar([]ImageFile{dir("usr", 0o755), {Path: "usr/bin", Mode: 0o755, Dir: true},
		{Path: "usr/bin/python3", Mode: 0o755, Data: []byte("elf")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layer, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteImage(PythonSpec(layer), path); err != nil {
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
	if len(layers) != 1 || cf.OS != "linux" || !cmp.Equal(cf.Config.Cmd, []string{"python3"}) || len(cf.Config.Entrypoint) != 0 {
		t.Errorf("image: %d layers, os %q, cmd %v, entrypoint %v", len(layers), cf.OS, cf.Config.Cmd, cf.Config.Entrypoint)
	}
	if !contains(cf.Config.Env, "LANG=C.UTF-8") || !strings.Contains(strings.Join(cf.Config.Env, " "), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin") {
		t.Errorf("env %q", cf.Config.Env)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	got, _ := io.ReadAll(rc)
	if !bytes.Equal(got, data) {
		t.Error("the image's layer is not the layer file")
	}
}

func TestPauseKeepsDefaultEnv(t *testing.T) {
	img, err := BuildImage(PauseSpec([]byte("binary")))
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	if diff := cmp.Diff(defaultEnv, cf.Config.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestCacheKeys(t *testing.T) {
	if a, b := imagesKey([]byte("x")), cacheKey("images", []byte("x")); a != b || !strings.HasPrefix(a, "images-") || len(a) != len("images-")+16 {
		t.Errorf("imagesKey %q, cacheKey %q", a, b)
	}
	if cacheKey("python", []byte("a")) == cacheKey("python", []byte("b")) {
		t.Error("different inputs give the same key")
	}
}
