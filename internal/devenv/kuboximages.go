package devenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ControllerImage, RouterImage and NodeImage hold kubox-controller, kubox-router and kubox-node;
// config/dev runs them on the local node (kubox dev up --in-cluster).
const (
	ControllerImage = "kubox.local/kubox-controller:dev"
	RouterImage     = "kubox.local/kubox-router:dev"
	NodeImage       = "kubox.local/kubox-node:dev"
)

// NonRootID is the user and group the component images run as (distroless's "nonroot").
const NonRootID = 65532

// versionVar is the linker variable that sets the version a binary reports (internal/version).
const versionVar = "github.com/kubox-dev/kubox/internal/version.gitVersion"

// ComponentImage names one image of a kubox component built from ./cmd/<Name>.
type ComponentImage struct {
	// Name is the command under ./cmd, the binary's path in the image and its cache folder.
	Name string
	// Tag is the image reference the tarball carries.
	Tag string
	// Version, when set, is linked into the binary as its version (-X internal/version.gitVersion);
	// empty leaves the version to the build info, as a plain go build does.
	Version string
	// Root runs the image as root rather than NonRootID: kubox-node, which runs runsc on the
	// node's sandboxes.
	Root bool
	// Files are more files the image carries (mode 0755), by their path in the image, read from
	// the host path each names: kubox-node's runsc and gVisor shim, which `kubox-node install`
	// copies onto the node (NodeBinaries).
	Files map[string]string
}

// NodeBinDir is the folder of kubox-node's image holding runsc and containerd-shim-runsc-v1
// (kubox-node install --bin-dir).
const NodeBinDir = "opt/kubox-node/bin"

// NodeBinaries are the files of kubox-node's image that `kubox-node install` copies onto the node,
// read from gvisorDir (the pinned, patched gVisor build of hack/tools/install.sh).
func NodeBinaries(gvisorDir string) map[string]string {
	files := map[string]string{}
	for _, name := range []string{"runsc", "containerd-shim-runsc-v1"} {
		files[NodeBinDir+"/"+name] = filepath.Join(gvisorDir, name)
	}
	return files
}

// The component images of the checkout, as config/dev names them.
var (
	ControllerComponentImage = ComponentImage{Name: Controller, Tag: ControllerImage}
	RouterComponentImage     = ComponentImage{Name: Router, Tag: RouterImage}
	NodeComponentImage       = ComponentImage{Name: NodeAPI, Tag: NodeImage, Root: true}
)

// ComponentSpec lays out a component image: the static binary at /<name> and an /etc/passwd and
// /etc/group that name the user 65532, which the image runs as. Nothing else: no shell, no base
// image, no writable folder (the Deployments mount the root filesystem read-only).
func ComponentSpec(name, tag string, bin []byte) ImageSpec {
	passwd := fmt.Sprintf("root:x:0:0:root:/:/sbin/nologin\nnonroot:x:%[1]d:%[1]d:nonroot:/:/sbin/nologin\n", NonRootID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRootID)
	return ImageSpec{Tag: tag, Files: []ImageFile{
		dir("etc", 0o755),
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: name, Mode: 0o755, Data: bin},
	}, Entrypoint: []string{"/" + name}, User: fmt.Sprintf("%d:%d", NonRootID, NonRootID)}
}

// BuildComponentImage builds ./cmd/<img.Name> from the checkout and writes its image into
// cacheDir/<img.Name>, keyed by the binary, the tag and the user (see buildGoImage).
func BuildComponentImage(repoDir, cacheDir string, img ComponentImage) (string, error) {
	extra, err := imageFiles(img.Files)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", img.Tag, err)
	}
	return buildGoImage(repoDir, filepath.Join(cacheDir, img.Name), img.Name, img.Version, func(bin []byte) ImageSpec {
		s := ComponentSpec(img.Name, img.Tag, bin)
		s.Files = append(s.Files, extra...)
		if img.Root {
			s.User = "0:0"
		}
		return s
	})
}

// imageFiles reads files (path in the image: host path) with their parent folders, sorted.
func imageFiles(files map[string]string) ([]ImageFile, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var out []ImageFile
	dirs := map[string]bool{}
	for _, p := range paths {
		for d := filepath.Dir(p); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		data, err := os.ReadFile(files[p])
		if err != nil {
			return nil, fmt.Errorf("read %s for /%s: %w (hack/tools/install.sh node builds it)", files[p], p, err)
		}
		out = append(out, ImageFile{Path: p, Mode: 0o755, Data: data})
	}
	var ds []string
	for d := range dirs {
		ds = append(ds, d)
	}
	sort.Strings(ds) // parents first
	folders := make([]ImageFile, 0, len(ds))
	for _, d := range ds {
		folders = append(folders, dir(d, 0o755))
	}
	return append(folders, out...), nil
}

// BuildComponentImages builds the images of config/dev's components (ControllerImage,
// RouterImage, NodeImage carrying runsc and the shim of gvisorDir), reports each with its size and returns their tarballs by component.
func BuildComponentImages(p *Progress, repoDir, cacheDir, gvisorDir string) (map[string]string, error) {
	paths := map[string]string{}
	node := NodeComponentImage
	node.Files = NodeBinaries(gvisorDir)
	for _, img := range []ComponentImage{ControllerComponentImage, RouterComponentImage, node} {
		path, err := BuildComponentImage(repoDir, cacheDir, img)
		if err != nil {
			return nil, err
		}
		paths[img.Name] = path
		p.Say("image %s: %s (%s)", img.Tag, path, fileSize(path))
	}
	return paths, nil
}

// buildGoImage builds ./cmd/<name> static (CGO off, -trimpath, stripped; version linked in when
// given) and writes spec(binary) as a tarball in cacheDir named by a hash of the image format,
// the tag, the user and the binary: an unchanged binary reuses its tarball, a changed one gets a
// new tarball, so `up` always runs the checkout's code. go build itself takes seconds once its
// cache is warm.
func buildGoImage(repoDir, cacheDir, name, version string, spec func([]byte) ImageSpec) (string, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cacheDir, name+"-build-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bin := filepath.Join(tmp, name)
	cmd := exec.Command("go", GoBuildArgs(name, version, bin)...)
	cmd.Dir = repoDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %v: %s", name, err, firstLines(string(out), 5))
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	s := spec(data)
	key := []string{imageFormat, s.Tag, s.User}
	for _, f := range s.Files {
		key = append(key, f.Path, string(f.Data))
	}
	sum := sha256.Sum256([]byte(strings.Join(key, "\x00")))
	path := filepath.Join(cacheDir, name+"-"+hex.EncodeToString(sum[:8])+".tar")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	return path, WriteImage(s, path)
}

// GoBuildArgs is the go command line that builds ./cmd/<name> into out for an image: no paths of
// this machine in the binary, no symbol tables, and the version linked in when given.
func GoBuildArgs(name, version, out string) []string {
	ldflags := "-s -w"
	if version != "" {
		ldflags += " -X " + versionVar + "=" + version
	}
	return []string{"build", "-trimpath", "-ldflags=" + ldflags, "-o", out, "./cmd/" + name}
}

func fileSize(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.1f MB", float64(st.Size())/1e6)
}
