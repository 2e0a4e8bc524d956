package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kubox-dev/kubox/internal/atomicfile"
)

// ManifestFile is the name of the manifest in a checkpoint directory; it is written last.
const ManifestFile = "manifest.json"

// Kind says what a checkpoint holds.
type Kind string

const (
	// Full holds the processes' memory, their open files and sockets, and the filesystems.
	Full Kind = "full"
	// Filesystem holds only the sandbox's writable filesystem layers (runsc fscheckpoint).
	Filesystem Kind = "filesystem"
)

// imageDir, specDir and filesDir are the parts of a checkpoint directory (doc.go).
const (
	imageDir = "image"
	specDir  = "specs"
	filesDir = "files"
)

// Manifest describes a complete checkpoint directory.
type Manifest struct {
	Version   int    `json:"version"`
	Kind      Kind   `json:"kind"`
	SandboxID string `json:"sandboxID"`
	// Pod is the Pod the checkpoint was taken of.
	Pod        PodRef      `json:"pod"`
	Runsc      string      `json:"runsc"`
	Created    time.Time   `json:"created"`
	Duration   Duration    `json:"duration"`
	Size       int64       `json:"size"`
	SHA256     string      `json:"sha256"`
	Containers []Container `json:"containers"`
	Files      []File      `json:"files"`
}

// PodRef names a Pod; UID tells it from a later Pod of the same name.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Container is one container of the checkpointed Pod; the sandbox (pause) container comes first.
type Container struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Image string `json:"image"`
	// Sandbox is true for the Pod's sandbox container, the root of the gVisor sandbox.
	Sandbox bool `json:"sandbox,omitempty"`
	// Spec is the OCI spec's path in the directory.
	Spec string `json:"spec"`
	// Copied maps a mount's index in the spec to the copy of its source in the directory.
	Copied map[int]string `json:"copied,omitempty"`
	// Volumes maps the index of a volume mount copied on request (Options.CopyMounts, the Pod's
	// own PersistentVolumes) to its copy: a Pod started from the checkpoint mounts new volumes,
	// which the shim fills from these copies while they are empty.
	Volumes map[int]string `json:"volumes,omitempty"`
}

// File is one file of the directory, its path relative to it. A symbolic link (a link the sandbox
// had in an emptyDir) has its target in Link and the SHA-256 of that target, size 0.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Link   string `json:"link,omitempty"`
}

// Duration is a time.Duration that reads as seconds in JSON.
type Duration time.Duration

// MarshalJSON writes the duration in seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Seconds())
}

// UnmarshalJSON reads seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = Duration(s * float64(time.Second))
	return nil
}

// hashFiles lists every regular file and symbolic link below dir except the manifest and its
// signature, with its size and SHA-256 (a link's target, which is never followed), sorted by path.
func hashFiles(dir string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == ManifestFile || rel == SignatureFile {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			f, err := hashLink(path)
			f.Path = filepath.ToSlash(rel)
			files = append(files, f)
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		f, err := hashFile(path)
		f.Path = filepath.ToSlash(rel)
		files = append(files, f)
		return err
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

func hashFile(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return File{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, err
}

func hashLink(path string) (File, error) {
	target, err := os.Readlink(path)
	sum := sha256.Sum256([]byte(target))
	return File{Link: target, SHA256: hex.EncodeToString(sum[:])}, err
}

// digest is the checkpoint's one checksum: SHA-256 over "path size sha256" lines of its files.
func digest(files []File) (string, int64) {
	h := sha256.New()
	var size int64
	for _, f := range files {
		if f.Link != "" {
			fmt.Fprintf(h, "%s %d %s link\n", f.Path, f.Size, f.SHA256)
		} else {
			fmt.Fprintf(h, "%s %d %s\n", f.Path, f.Size, f.SHA256)
		}
		size += f.Size
	}
	return hex.EncodeToString(h.Sum(nil)), size
}

// WriteManifest completes m from the files of the directory dir (their sizes, checksums and the
// overall checksum) and writes it as dir's manifest, atomically: what Checkpoint does last, for
// the tests of packages that move checkpoint directories.
func WriteManifest(dir string, m *Manifest) error { return writeManifest(dir, m) }

// writeManifest completes m from the directory's files and writes it atomically.
func writeManifest(dir string, m *Manifest) error {
	files, err := hashFiles(dir)
	if err != nil {
		return err
	}
	m.Files = files
	m.SHA256, m.Size = digest(files)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ManifestFile), bytes.NewReader(append(b, '\n')), 0o644)
}

// ErrIncomplete marks a checkpoint directory that does not match its manifest, or has none.
var ErrIncomplete = errors.New("checkpoint incomplete")

// Verify reads every file of the checkpoint directory back and checks it against the manifest:
// the same files, sizes and SHA-256s, the overall checksum, and the image files runsc needs for
// the manifest's kind. It returns the manifest when all of that holds.
func Verify(dir string) (*Manifest, error) {
	m, err := ReadManifest(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	files, err := hashFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIncomplete, err)
	}
	if err := sameFiles(m.Files, files); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIncomplete, err)
	}
	if sum, size := digest(files); sum != m.SHA256 || size != m.Size {
		return nil, fmt.Errorf("%w: checksum %s (%d bytes), manifest says %s (%d bytes)", ErrIncomplete, sum, size, m.SHA256, m.Size)
	}
	if err := hasImage(files, m.Kind); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIncomplete, err)
	}
	return m, nil
}

// ReadManifest reads the manifest file path without checking the files it lists (Verify does)
// or its signature (Key.CheckSignature does): a directory whose manifest was written holds what
// it lists, since the manifest is written last. ErrIncomplete when it is missing or unreadable.
func ReadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIncomplete, err)
	}
	return parseManifest(b)
}

func parseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrIncomplete, err)
	}
	return &m, nil
}

func sameFiles(want, got []File) error {
	have := make(map[string]File, len(got))
	for _, f := range got {
		have[f.Path] = f
	}
	for _, w := range want {
		g, ok := have[w.Path]
		switch {
		case !ok:
			return fmt.Errorf("%s is missing", w.Path)
		case g != w:
			return fmt.Errorf("%s has %d bytes sha256 %s, manifest says %d bytes sha256 %s", w.Path, g.Size, g.SHA256, w.Size, w.SHA256)
		}
		delete(have, w.Path)
	}
	for p := range have {
		return fmt.Errorf("%s is not in the manifest", p)
	}
	return nil
}

// requiredImage lists the image files runsc writes for each kind; a full checkpoint written with
// compression has checkpoint.img alone.
var requiredImage = map[Kind][]string{
	Full:       {"checkpoint.img"},
	Filesystem: {"fscheckpoint.pb", "multitar.img", "pages_meta.img", "pages.img"},
}

func hasImage(files []File, kind Kind) error {
	req, ok := requiredImage[kind]
	if !ok {
		return fmt.Errorf("unknown kind %q", kind)
	}
	have := map[string]int64{}
	for _, f := range files {
		have[f.Path] = f.Size
	}
	for _, name := range req {
		size, ok := have[imageDir+"/"+name]
		if !ok || (size == 0 && name != "pages.img") {
			return fmt.Errorf("image file %s is missing or empty", name)
		}
	}
	return nil
}
