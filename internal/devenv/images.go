package devenv

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imageFormat changes whenever the image contents change for the same inputs, so caches keyed
// by it are rebuilt.
const imageFormat = "kubox-images-1"

// ImageFile is one entry of an image's single layer: a directory, a symlink, or a file.
type ImageFile struct {
	Path string
	Mode int64
	Data []byte
	Link string
	Dir  bool
}

// ImageSpec describes a single-layer image built from local files (no base image, no registry).
type ImageSpec struct {
	Tag        string
	Files      []ImageFile
	Entrypoint []string
	Cmd        []string
}

// BusyboxSpec lays out busybox-static with a symlink for every applet.
func BusyboxSpec(busybox []byte, applets []string) ImageSpec {
	files := []ImageFile{
		dir("bin", 0o755), dir("etc", 0o755), dir("tmp", 0o1777), dir("root", 0o700),
		dir("dev", 0o755), dir("proc", 0o555), dir("sys", 0o555), dir("var", 0o755), dir("var/www", 0o755),
		{Path: "bin/busybox", Mode: 0o755, Data: busybox},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "var/www/index.html", Mode: 0o644, Data: []byte("hello from kubox busybox\n")},
	}
	for _, a := range applets {
		if a != "" && a != "busybox" && !strings.Contains(a, "/") {
			files = append(files, ImageFile{Path: "bin/" + a, Link: "busybox"})
		}
	}
	return ImageSpec{Tag: BusyboxImage, Files: files, Cmd: []string{"sh"}}
}

// PauseSpec wraps the static pause binary (hack/images/pause) as the sandbox image.
func PauseSpec(pause []byte) ImageSpec {
	return ImageSpec{Tag: SandboxImage, Files: []ImageFile{{Path: "pause", Mode: 0o755, Data: pause}},
		Entrypoint: []string{"/pause"}}
}

func dir(p string, mode int64) ImageFile { return ImageFile{Path: p, Mode: mode, Dir: true} }

// LayerTar writes files as an uncompressed tar with zero mtimes, so equal inputs give equal layers.
func LayerTar(files []ImageFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Path, Mode: f.Mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, f.Path+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	err := tw.Close()
	return buf.Bytes(), err
}

// BuildImage assembles spec into a v1.Image for linux on this machine's architecture.
func BuildImage(spec ImageSpec) (v1.Image, error) {
	data, err := LayerTar(spec.Files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Config.Env = []string{"PATH=/bin:/sbin:/usr/bin:/usr/sbin"}
	cf.Config.Entrypoint, cf.Config.Cmd = spec.Entrypoint, spec.Cmd
	return mutate.ConfigFile(img, cf)
}

// WriteImage writes spec as a docker-archive tarball that `ctr images import` reads.
func WriteImage(spec ImageSpec, path string) error {
	img, err := BuildImage(spec)
	if err != nil {
		return fmt.Errorf("build image %s: %w", spec.Tag, err)
	}
	tag, err := name.NewTag(spec.Tag)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		return fmt.Errorf("write image %s: %w", spec.Tag, err)
	}
	return os.Rename(tmp, path)
}

// Images are the tarballs `up` imports into containerd.
type Images struct{ Dir, Busybox, Pause string }

// BuildImages builds the busybox and pause images into a folder of cacheDir keyed by their
// inputs (the busybox binary, the pause source, the format). A complete folder is reused.
func BuildImages(repoDir, cacheDir, busyboxPath string) (Images, bool, error) {
	busybox, err := os.ReadFile(busyboxPath)
	if err != nil {
		return Images{}, false, fmt.Errorf("read busybox: %w (install busybox-static)", err)
	}
	pauseSrc := filepath.Join(repoDir, "hack", "images", "pause", "main.go")
	src, err := os.ReadFile(pauseSrc)
	if err != nil {
		return Images{}, false, fmt.Errorf("read the pause source: %w", err)
	}
	out := filepath.Join(cacheDir, imagesKey(busybox, src))
	imgs := Images{Dir: out, Busybox: filepath.Join(out, "busybox.tar"), Pause: filepath.Join(out, "pause.tar")}
	if _, err := os.Stat(filepath.Join(out, ".complete")); err == nil {
		return imgs, true, nil
	}
	if err := buildImagesInto(repoDir, busyboxPath, busybox, imgs); err != nil {
		return Images{}, false, err
	}
	return imgs, false, os.WriteFile(filepath.Join(out, ".complete"), nil, 0o644)
}

func imagesKey(parts ...[]byte) string {
	h := sha256.New()
	h.Write([]byte(imageFormat))
	for _, p := range parts {
		h.Write(p)
	}
	return "images-" + hex.EncodeToString(h.Sum(nil))[:16]
}

func buildImagesInto(repoDir, busyboxPath string, busybox []byte, imgs Images) error {
	if err := os.MkdirAll(imgs.Dir, 0o755); err != nil {
		return err
	}
	if err := CheckStatic(busyboxPath); err != nil {
		return fmt.Errorf("%w: install busybox-static (apt-get install -y busybox-static)", err)
	}
	list, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return fmt.Errorf("list busybox applets: %w", err)
	}
	if err := WriteImage(BusyboxSpec(busybox, strings.Fields(string(list))), imgs.Busybox); err != nil {
		return err
	}
	pause, err := buildPause(repoDir, imgs.Dir)
	if err != nil {
		return err
	}
	return WriteImage(PauseSpec(pause), imgs.Pause)
}

func buildPause(repoDir, outDir string) ([]byte, error) {
	bin := filepath.Join(outDir, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./hack/images/pause")
	cmd.Dir = repoDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the pause binary: %v\n%s", err, out)
	}
	return os.ReadFile(bin)
}
