package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Options says what to checkpoint and where.
type Options struct {
	// SandboxID is the Pod's sandbox container ID (the CRI PodSandbox ID).
	SandboxID string
	// Dir is the checkpoint directory; it must not exist yet.
	Dir string
	// TaskDir is containerd's task directory for the CRI namespace, holding each container's
	// bundle: <containerd state>/io.containerd.runtime.v2.task/k8s.io.
	TaskDir string
	// PodDirs are the node's per-Pod directories (the kubelet's pods folder, containerd's CRI
	// sandboxes folders); bind mounts from below them are copied into the checkpoint.
	PodDirs []string
	// Kind is Full (the default) or Filesystem.
	Kind Kind
	// LeaveRunning keeps the sandbox running after the checkpoint (a snapshot or a fork); without
	// it every process exits once the image is written (a pause).
	LeaveRunning bool
	// Compress writes the image with runsc's flate-best-speed compression (Full only): about a
	// quarter of the size, no lazy page loading on restore.
	Compress bool
	// CopyMounts are volume mounts whose content is copied too (Container.Volumes): the Pod's
	// own PersistentVolumes, which the sandboxes started from the checkpoint get new and empty.
	// Each must be a bind mount of the Pod.
	CopyMounts []MountRef
}

// MountRef is a mount of one of the Pod's containers: the container's name, the mount's path in it.
type MountRef struct {
	Container, Path string
}

// Checkpoint saves the Pod sandbox o.SandboxID into o.Dir and returns its manifest once the
// directory verifies. On failure it removes o.Dir: a checkpoint is complete or absent.
func Checkpoint(ctx context.Context, r Runsc, o Options) (m *Manifest, err error) {
	if o.Kind == "" {
		o.Kind = Full
	}
	bundles, err := podBundles(o.TaskDir, o.SandboxID)
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(o.Dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(o.Dir)
		}
	}()
	version, err := r.Version(ctx)
	if err != nil {
		return nil, err
	}
	sb := bundles[0].spec
	m = &Manifest{Version: 1, Kind: o.Kind, SandboxID: o.SandboxID, Runsc: version, Created: time.Now().UTC(),
		Pod: PodRef{Namespace: sb.annotation(annSandboxNS), Name: sb.annotation(annSandboxName), UID: sb.annotation(annSandboxUID)}}
	start := time.Now()
	if err := saveStopped(ctx, r, o, bundles, m); err != nil {
		return nil, err
	}
	m.Duration = Duration(time.Since(start))
	if err := writeManifest(o.Dir, m); err != nil {
		return nil, err
	}
	return Verify(o.Dir)
}

// saveStopped takes the memory image and copies the bundles' private mounts at one moment, while
// nothing in the sandbox runs: a file a process creates or renames between a copy and a later
// stop would otherwise be missing from the copy, and the restore would fail. Without
// o.LeaveRunning the checkpoint ends the sandbox, and the files are copied after it. With it, the
// sandbox is paused for the copy and the checkpoint and resumed after them, or after a failure,
// so a checkpoint that did not happen does not leave it frozen. (A sandbox paused by runsc is
// never checkpointed to its end: runsc keeps such a container "paused" once its sandbox has
// exited, and the kubelet can then neither stop nor remove it.)
func saveStopped(ctx context.Context, r Runsc, o Options, bundles []bundle, m *Manifest) (err error) {
	if !o.LeaveRunning {
		if err := r.run(ctx, checkpointArgs(o)...); err != nil {
			return err
		}
		return saveBundles(o, bundles, m)
	}
	if err := r.run(ctx, "pause", o.SandboxID); err != nil {
		return err
	}
	defer func() {
		if rerr := r.run(context.WithoutCancel(ctx), "resume", o.SandboxID); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := saveBundles(o, bundles, m); err != nil {
		return err
	}
	return r.run(ctx, checkpointArgs(o)...)
}

// saveBundles saves every bundle of the Pod into the checkpoint directory. A mount of
// o.CopyMounts that no container has fails the checkpoint: its content would be silently missing.
func saveBundles(o Options, bundles []bundle, m *Manifest) error {
	want := map[MountRef]bool{}
	for _, r := range o.CopyMounts {
		want[r] = false
	}
	for n, b := range bundles {
		c, err := saveBundle(o.Dir, b, n, o.PodDirs, want)
		if err != nil {
			return err
		}
		m.Containers = append(m.Containers, c)
	}
	for r, copied := range want {
		if !copied {
			return fmt.Errorf("volume mount %s of container %q: the Pod has no such bind mount to copy", r.Path, r.Container)
		}
	}
	return nil
}

func checkpointArgs(o Options) []string {
	image := "--image-path=" + ImagePath(o.Dir)
	leave := "--leave-running=" + strconv.FormatBool(o.LeaveRunning)
	if o.Kind == Filesystem {
		return []string{"fscheckpoint", image, leave, o.SandboxID}
	}
	args := []string{"checkpoint", image, leave}
	if o.Compress {
		args = append(args, "--compression=flate-best-speed")
	}
	return append(args, o.SandboxID)
}

// saveBundle writes bundle b's spec as specs/<n>.json and copies its private mounts, and the
// volume mounts of toCopy (marked true once copied), to files/<n>/.
func saveBundle(dir string, b bundle, n int, podDirs []string, toCopy map[MountRef]bool) (Container, error) {
	c := describe(b, n)
	for i, m := range b.spec.mounts() {
		pm, private := privateMountOf(m, podDirs)
		ref := MountRef{Container: c.Name, Path: fmt.Sprint(m["destination"])}
		_, volume := toCopy[ref]
		volume = volume && !private && !c.Sandbox && m["type"] == "bind"
		if !private && !volume {
			continue
		}
		if volume {
			pm = privateMount{source: fmt.Sprint(m["source"]), tenant: true}
		}
		rel := filepath.Join(filesDir, strconv.Itoa(n), strconv.Itoa(i))
		if err := copyTree(pm.source, filepath.Join(dir, rel), !pm.tenant); err != nil {
			return c, fmt.Errorf("copy mount %s of %s: %w", m["destination"], b.id, err)
		}
		if volume {
			toCopy[ref] = true
			c.Volumes = setIndex(c.Volumes, i, filepath.ToSlash(rel))
		} else {
			c.Copied = setIndex(c.Copied, i, filepath.ToSlash(rel))
		}
	}
	js, err := json.MarshalIndent(b.spec, "", "  ")
	if err != nil {
		return c, err
	}
	if err := os.MkdirAll(filepath.Join(dir, specDir), 0o700); err != nil {
		return c, err
	}
	return c, os.WriteFile(filepath.Join(dir, c.Spec), js, 0o600)
}

func setIndex(m map[int]string, i int, v string) map[int]string {
	if m == nil {
		m = map[int]string{}
	}
	m[i] = v
	return m
}

// copyTree copies src to dst. With follow, symbolic links are followed, so the copy holds regular
// files only (a projected service-account volume is a tree of links into a timestamped folder):
// only for what the kubelet wrote. Without it, for what the sandbox wrote, a link is copied as
// the link it is: followed on the node, a link the sandbox made to a node file (/etc/shadow)
// would put that file in the snapshot, readable to every sandbox started from it. Sockets, pipes
// and devices hold nothing to copy and are left out; the sandbox is stopped while this runs, so
// nothing it does can change a folder into a link under the copy.
func copyTree(src, dst string, follow bool) error {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	st, err := stat(src)
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return copyLink(src, dst)
	case st.Mode().IsRegular():
		return copyFile(src, dst, st.Mode().Perm())
	case !st.IsDir():
		return nil
	}
	if err := os.MkdirAll(dst, st.Mode().Perm()|0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), follow); err != nil {
			return err
		}
	}
	return nil
}

// copyLink makes dst a symbolic link with src's target, which is never resolved here.
func copyLink(src, dst string) error {
	target, err := os.Readlink(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	return os.Symlink(target, dst)
}

func copyFile(src, dst string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
