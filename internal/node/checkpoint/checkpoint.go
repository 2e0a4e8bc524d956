package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
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
	// MaxCopyBytes bounds the bytes copied from the Pod's mounts (CopyMounts included), all
	// together; zero is DefaultMaxCopyBytes. A checkpoint that would copy more fails, naming
	// the mount and the limit: a sandbox's files are the tenant's, and must not fill the node.
	MaxCopyBytes int64
	// Key signs the manifest (SignatureFile), bound to the namespace and name of Dir, which is
	// <snapshot root>/<namespace>/<snapshot>. Without it the checkpoint is unsigned, and the
	// gVisor shim and the snapshot store refuse it (tests only; kubox-node always has a key).
	Key Key
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
	return signCheckpoint(o.Dir, o.Key)
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
		return saveBundles(ctx, o, bundles, m)
	}
	if err := r.run(ctx, "pause", o.SandboxID); err != nil {
		return err
	}
	defer func() {
		if rerr := r.run(context.WithoutCancel(ctx), "resume", o.SandboxID); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := saveBundles(ctx, o, bundles, m); err != nil {
		return err
	}
	return r.run(ctx, checkpointArgs(o)...)
}

// saveBundles saves every bundle of the Pod into the checkpoint directory, copying at most
// o.MaxCopyBytes from its mounts until ctx ends. A mount of o.CopyMounts that no container has
// fails the checkpoint: its content would be silently missing.
func saveBundles(ctx context.Context, o Options, bundles []bundle, m *Manifest) error {
	budget := newCopyBudget(ctx, o.MaxCopyBytes)
	want := map[MountRef]bool{}
	for _, r := range o.CopyMounts {
		want[r] = false
	}
	for n, b := range bundles {
		c, err := saveBundle(o.Dir, b, n, o.PodDirs, want, budget)
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
// volume mounts of toCopy (marked true once copied), to files/<n>/, within budget.
func saveBundle(dir string, b bundle, n int, podDirs []string, toCopy map[MountRef]bool, budget *copyBudget) (Container, error) {
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
			pm = privateMount{source: fmt.Sprint(m["source"])}
		}
		rel := filepath.Join(filesDir, strconv.Itoa(n), strconv.Itoa(i))
		if err := copyTree(pm.source, filepath.Join(dir, rel), pm.kubelets, budget); err != nil {
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
