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
	Tag   string
	Files []ImageFile
	// LayerFile is a ready uncompressed layer tar, used instead of Files.
	LayerFile  string
	Entrypoint []string
	Cmd        []string
	// Env defaults to defaultEnv.
	Env []string
	// User is the image config's user ("uid:gid"); empty runs as root.
	User string
}

var defaultEnv = []string{"PATH=/bin:/sbin:/usr/bin:/usr/sbin"}

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

// PythonSpec is kubox.local/python:dev: the Debian rootfs in layerFile, running python3.
func PythonSpec(layerFile string) ImageSpec {
	return ImageSpec{Tag: PythonImage, LayerFile: layerFile, Cmd: []string{"python3"},
		Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}}
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

// layer is spec's single layer: its LayerFile, or a tar of its Files.
func (spec ImageSpec) layer() (v1.Layer, error) {
	if spec.LayerFile != "" {
		return tarball.LayerFromFile(spec.LayerFile, tarball.WithCompressedCaching)
	}
	data, err := LayerTar(spec.Files)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

// BuildImage assembles spec into a v1.Image for linux on this machine's architecture.
func BuildImage(spec ImageSpec) (v1.Image, error) {
	layer, err := spec.layer()
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
	cf.Config.Env = spec.Env
	if len(cf.Config.Env) == 0 {
		cf.Config.Env = defaultEnv
	}
	cf.Config.Entrypoint, cf.Config.Cmd = spec.Entrypoint, spec.Cmd
	cf.Config.User = spec.User
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

// Images are the tarballs `up` imports into containerd; Components (by component name) only in
// the in-cluster mode.
type Images struct {
	Dir, Busybox, Pause, Python, Agent string
	Components                         map[string]string
}

// BuildImages is BuildImagesProgress plus the images of config/dev's components
// (BuildComponentImages), with progress on stderr: every image `make images` builds.
func BuildImages(repoDir, cacheDir, busyboxPath string) (Images, bool, error) {
	p := NewProgress(os.Stderr)
	imgs, cached, err := BuildImagesProgress(p, repoDir, cacheDir, busyboxPath)
	if err != nil {
		return Images{}, false, err
	}
	p.Say("image %s: %s (%s)", AgentImage, imgs.Agent, fileSize(imgs.Agent))
	gvisor, err := toolsScript(repoDir, "dir", "gvisor")
	if err != nil {
		return Images{}, false, err
	}
	imgs.Components, err = BuildComponentImages(p, repoDir, cacheDir, gvisor)
	return imgs, cached, err
}

// BuildImagesProgress builds the busybox and pause images (buildBase), the Python image
// (BuildPython) and the agent image (BuildAgentImage), each cached on its own. It reports true
// when the busybox, pause and Python images were cached (the agent is rebuilt from the checkout
// every time, which takes seconds).
func BuildImagesProgress(p *Progress, repoDir, cacheDir, busyboxPath string) (Images, bool, error) {
	imgs, cached, err := buildBase(repoDir, cacheDir, busyboxPath)
	if err != nil {
		return Images{}, false, err
	}
	python, pyCached, err := BuildPython(cacheDir, p)
	if err != nil {
		return Images{}, false, err
	}
	imgs.Python = python
	if imgs.Agent, err = BuildAgentImage(repoDir, filepath.Join(cacheDir, "agent")); err != nil {
		return Images{}, false, err
	}
	return imgs, cached && pyCached, nil
}

// buildBase builds the busybox and pause images into a folder of cacheDir keyed by their
// inputs (the busybox binary, the pause source, the format). A complete folder is reused.
func buildBase(repoDir, cacheDir, busyboxPath string) (Images, bool, error) {
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

func imagesKey(parts ...[]byte) string { return cacheKey("images", parts...) }

// cacheKey names a cache folder: prefix and a hash of the format and parts.
func cacheKey(prefix string, parts ...[]byte) string {
	h := sha256.New()
	h.Write([]byte(imageFormat))
	for _, p := range parts {
		h.Write(p)
	}
	return prefix + "-" + hex.EncodeToString(h.Sum(nil))[:16]
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

// PythonImage is a Debian rootfs with python3, for Python sandboxes.
const PythonImage = "kubox.local/python:dev"

// Rootfs is a Debian root filesystem that mmdebstrap assembles from Debian's mirrors (no image
// is pulled).
type Rootfs struct {
	Suite   string
	Variant string
	Include []string
	// Purge is removed with dpkg once the rest is installed.
	Purge []string
	// DpkgOpts are dpkg options such as path-exclude (docs, man pages, translations).
	DpkgOpts []string
}

// PythonRootfs is the rootfs of kubox.local/python:dev: Debian 12's Essential packages and
// python3, without apt. Bookworm's init-system-helpers pulls in usrmerge and with it perl;
// usr-is-merged satisfies the same dependency, so usrmerge and perl are purged.
var PythonRootfs = Rootfs{
	Suite:   "bookworm",
	Variant: "essential",
	Include: []string{"python3", "usr-is-merged"},
	Purge: []string{"usrmerge", "libfile-find-rule-perl", "libnumber-compare-perl", "libtext-glob-perl",
		"perl", "libperl5.36", "perl-modules-5.36"},
	DpkgOpts: []string{
		"path-exclude=/usr/share/man/*", "path-exclude=/usr/share/info/*",
		"path-exclude=/usr/share/locale/*", "path-include=/usr/share/locale/locale.alias",
		"path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright",
	},
}

// MmdebstrapArgs is the mmdebstrap command line that writes r as a tarball to out. Without a
// mirror argument mmdebstrap uses deb.debian.org with the suite's updates and security updates.
func (r Rootfs) MmdebstrapArgs(out string) []string {
	args := []string{"--mode=root", "--format=tar", "--variant=" + r.Variant, "--include=" + strings.Join(r.Include, ",")}
	for _, o := range r.DpkgOpts {
		args = append(args, "--dpkgopt="+o)
	}
	if len(r.Purge) > 0 {
		args = append(args, `--customize-hook=chroot "$1" dpkg --purge `+strings.Join(r.Purge, " "))
	}
	return append(args, r.Suite, out)
}

// KeepRootfsEntry drops what must not be in an image layer: device nodes and fifos (the runtime
// provides /dev) and the build host's /etc/hostname and /etc/resolv.conf (the kubelet mounts
// its own).
func KeepRootfsEntry(h *tar.Header) bool {
	switch h.Typeflag {
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return false
	}
	switch strings.TrimPrefix(h.Name, "./") {
	case "etc/hostname", "etc/resolv.conf":
		return false
	}
	return true
}

// FilterTar copies the entries of the tar in r that keep accepts to w.
func FilterTar(r io.Reader, w io.Writer, keep func(*tar.Header) bool) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		if !keep(h) {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

// BuildPython builds kubox.local/python:dev into a folder of cacheDir keyed by PythonRootfs, the
// architecture and the format, and returns its tarball. A complete folder is reused, so
// mmdebstrap (a few minutes) runs only when the folder is missing.
func BuildPython(cacheDir string, p *Progress) (string, bool, error) {
	key := cacheKey("python", []byte(strings.Join(PythonRootfs.MmdebstrapArgs("-"), "\n")), []byte(runtime.GOARCH))
	out := filepath.Join(cacheDir, key)
	path := filepath.Join(out, "python.tar")
	if _, err := os.Stat(filepath.Join(out, ".complete")); err == nil {
		return path, true, nil
	}
	if err := buildPythonInto(out, path, p); err != nil {
		return "", false, err
	}
	return path, false, os.WriteFile(filepath.Join(out, ".complete"), nil, 0o644)
}

func buildPythonInto(dir, path string, p *Progress) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("building %s runs mmdebstrap --mode=root: run it as root (sudo kubox dev images)", PythonImage)
	}
	if err := ensureMmdebstrap(p); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	p.Say("building %s: Debian %s + %s with mmdebstrap from Debian's mirrors (a few minutes, once)",
		PythonImage, PythonRootfs.Suite, strings.Join(PythonRootfs.Include, ", "))
	raw, layer := filepath.Join(dir, "mmdebstrap.tar"), filepath.Join(dir, "layer.tar")
	defer func() { _ = os.Remove(raw); _ = os.Remove(layer) }()
	if err := mmdebstrap(PythonRootfs, raw, p); err != nil {
		return err
	}
	if err := filterFile(raw, layer, KeepRootfsEntry); err != nil {
		return fmt.Errorf("filter the rootfs tarball: %w", err)
	}
	if err := WriteImage(PythonSpec(layer), path); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	p.Say("built %s in %s: %s (%.1f MB)", PythonImage, time.Since(start).Round(time.Second), path, float64(st.Size())/1e6)
	return nil
}

func mmdebstrap(r Rootfs, out string, p *Progress) error {
	cmd := exec.Command("mmdebstrap", r.MmdebstrapArgs(out)...)
	cmd.Stdout, cmd.Stderr = p.Writer(), p.Writer()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mmdebstrap %s: %w (its output is above; it downloads from Debian's mirrors, "+
			"so check that `apt-get update` works)", r.Suite, err)
	}
	return nil
}

func filterFile(in, out string, keep func(*tar.Header) bool) error {
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	dst, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := FilterTar(src, dst, keep); err != nil {
		_ = dst.Close()
		return err
	}
	return dst.Close()
}

// mmdebstrapPackage builds the Python image's rootfs; only an image build needs it.
var mmdebstrapPackage = DebPackage{"mmdebstrap", "/usr/bin/mmdebstrap"}

// ensureMmdebstrap installs mmdebstrap when it is missing, running `apt-get update` once when
// the first try fails, like EnsurePackages.
func ensureMmdebstrap(p *Progress) error {
	if fileExists(mmdebstrapPackage.Proof) {
		return nil
	}
	pkgs := []DebPackage{mmdebstrapPackage}
	line := AptInstallLine(pkgs)
	p.Say("installing mmdebstrap to build %s: %s", PythonImage, line)
	if aptInstall(pkgs) == nil {
		return nil
	}
	_ = exec.Command("apt-get", "update").Run()
	if out, err := aptInstallOutput(pkgs); err != nil {
		return fmt.Errorf("could not install mmdebstrap (it builds %s): %v\n%s\nrun by hand: apt-get update && %s",
			PythonImage, err, firstLines(out, 10), line)
	}
	return nil
}
