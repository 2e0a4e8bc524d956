package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// RootFS makes a container's root filesystem at target, an empty directory: a writable mount of
// the container's image (CtrImages.Mount on a containerd node).
type RootFS func(ctx context.Context, c Container, target string) error

// RestoreOptions says which checkpoint to restore and as what.
type RestoreOptions struct {
	// Dir is the checkpoint directory; it is only read.
	Dir string
	// ID is the new sandbox's ID; each other container becomes ID-<name>.
	ID string
	// WorkDir receives one bundle per container (config.json, rootfs, copies of private mounts);
	// it must exist and outlive the sandbox.
	WorkDir string
	// RootFS fills each bundle's rootfs directory.
	RootFS RootFS
}

// Restored is a sandbox Restore started.
type Restored struct {
	// IDs are the runsc container IDs, the sandbox's first.
	IDs []string
	// Containers maps each container's name to its runsc ID.
	Containers map[string]string
	// Bundles maps each runsc ID to its bundle directory, where the copies of the Pod's private
	// mounts live (files/<mount index>).
	Bundles map[string]string
}

// ErrUnsupported is returned for a checkpoint Restore cannot use.
var ErrUnsupported = errors.New("unsupported checkpoint")

// Restore verifies the checkpoint in o.Dir and restores it into a new gVisor sandbox run by r:
// the processes continue where the checkpoint stopped them, in a new network namespace, with
// copies of the Pod's private files. The checkpoint directory is left as it was, whether the
// restore succeeds or not.
func Restore(ctx context.Context, r Runsc, o RestoreOptions) (*Restored, error) {
	m, err := Verify(o.Dir)
	if err != nil {
		return nil, err
	}
	if m.Kind != Full {
		return nil, fmt.Errorf("%w: a %s checkpoint holds no processes to restore", ErrUnsupported, m.Kind)
	}
	res := &Restored{Containers: map[string]string{}, Bundles: map[string]string{}}
	bundles := make([]string, len(m.Containers))
	for i, c := range m.Containers {
		id := o.ID
		if !c.Sandbox {
			id = o.ID + "-" + c.Name
		}
		res.IDs = append(res.IDs, id)
		res.Containers[c.Name] = id
		if bundles[i], err = prepareBundle(ctx, o, c, id); err != nil {
			return nil, err
		}
		res.Bundles[id] = bundles[i]
	}
	// The specs name the old Pod's cgroup (the shim's dev.gvisor.spec.cgroup-parent annotation,
	// which the restore must keep unchanged): runsc would create it again and the kubelet kills
	// whatever runs in the cgroup of a deleted Pod. The restored sandbox runs in none.
	r.Flags = append(append([]string(nil), r.Flags...), "--ignore-cgroups")
	if err := restoreAll(ctx, r, ImagePath(o.Dir), res.IDs, bundles); err != nil {
		_ = r.Kill(context.WithoutCancel(ctx), res.IDs...)
		return nil, err
	}
	return res, nil
}

// restoreAll restores the sandbox container, then creates and restores each other container
// of the checkpoint into it. `runsc restore --detach` of the sandbox returns once the sandbox
// waits for them; creating them while it still runs fails or, worse, kills the sandbox as soon
// as the last one is restored (both seen on the dev node).
func restoreAll(ctx context.Context, r Runsc, image string, ids, bundles []string) error {
	if err := r.run(ctx, "restore", "--detach", "--bundle="+bundles[0], "--image-path="+image, ids[0]); err != nil {
		return err
	}
	for i := 1; i < len(ids); i++ {
		if err := r.run(ctx, "create", "--bundle="+bundles[i], ids[i]); err != nil {
			return err
		}
		if err := r.run(ctx, "restore", "--detach", "--bundle="+bundles[i], "--image-path="+image, ids[i]); err != nil {
			return err
		}
	}
	return nil
}

// prepareBundle writes container c's bundle for the new sandbox and returns its directory.
func prepareBundle(ctx context.Context, o RestoreOptions, c Container, id string) (string, error) {
	dir := filepath.Join(o.WorkDir, id)
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o700); err != nil {
		return "", err
	}
	s, err := readSpec(filepath.Join(o.Dir, c.Spec))
	if err != nil {
		return "", err
	}
	if err := o.RootFS(ctx, c, filepath.Join(dir, "rootfs")); err != nil {
		return "", fmt.Errorf("root filesystem of %s: %w", c.Name, err)
	}
	sources := map[int]string{}
	for i, rel := range c.Copied {
		sources[i] = filepath.Join(dir, "files", strconv.Itoa(i))
		if err := copyTree(filepath.Join(o.Dir, rel), sources[i], false, newCopyBudget(ctx, 0)); err != nil {
			return "", err
		}
	}
	rebase(s, dir, o.ID, sources)
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "config.json"), js, 0o600)
}

// rebase turns a checkpointed container's spec into one for the new sandbox sandboxID: its own
// root filesystem and mount copies; no cgroup path (the old Pod's cgroup is gone and runsc runs
// the sandbox in its own); namespaces without paths, so the sandbox gets a new network namespace
// instead of the old Pod's, and the others join the sandbox's.
func rebase(s spec, bundleDir, sandboxID string, sources map[int]string) {
	if root, ok := s["root"].(map[string]any); ok {
		root["path"] = filepath.Join(bundleDir, "rootfs")
	}
	s.setAnnotation(annSandboxID, sandboxID)
	linux, _ := s["linux"].(map[string]any)
	if linux != nil {
		delete(linux, "cgroupsPath")
		nss, _ := linux["namespaces"].([]any)
		for _, ns := range nss {
			if m, ok := ns.(map[string]any); ok {
				delete(m, "path")
			}
		}
	}
	for i, m := range s.mounts() {
		if src, ok := sources[i]; ok {
			m["source"] = src
		}
	}
}
