package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// saveBundles saves every bundle of the Pod into the checkpoint directory.
func saveBundles(o Options, bundles []bundle, m *Manifest) error {
	for n, b := range bundles {
		c, err := saveBundle(o.Dir, b, n, o.PodDirs)
		if err != nil {
			return err
		}
		m.Containers = append(m.Containers, c)
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

// saveBundle writes bundle b's spec as specs/<n>.json and copies its private mounts to files/<n>/.
func saveBundle(dir string, b bundle, n int, podDirs []string) (Container, error) {
	c := describe(b, n)
	for i, m := range b.spec.mounts() {
		src, ok := privateMount(m, podDirs)
		if !ok {
			continue
		}
		rel := filepath.Join(filesDir, strconv.Itoa(n), strconv.Itoa(i))
		if err := copyTree(src, filepath.Join(dir, rel)); err != nil {
			return c, fmt.Errorf("copy mount %s of %s: %w", m["destination"], b.id, err)
		}
		if c.Copied == nil {
			c.Copied = map[int]string{}
		}
		c.Copied[i] = filepath.ToSlash(rel)
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

// copyTree copies src to dst, following symbolic links, so the copy holds regular files only
// (a projected service-account volume is a tree of links into a timestamped folder).
func copyTree(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return copyFile(src, dst, st.Mode().Perm())
	}
	if err := os.MkdirAll(dst, st.Mode().Perm()|0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
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
