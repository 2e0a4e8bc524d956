package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
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
	if err := restoreAll(ctx, r, filepath.Join(o.Dir, imageDir), res.IDs, bundles); err != nil {
		_ = r.Kill(context.WithoutCancel(ctx), res.IDs...)
		return nil, err
	}
	return res, nil
}

// restoreAll restores the sandbox container, which waits in runsc until every other container
// of the checkpoint is created and restored into it, then those.
func restoreAll(ctx context.Context, r Runsc, image string, ids, bundles []string) error {
	done := make(chan error, 1)
	go func() {
		done <- r.run(ctx, "restore", "--detach", "--bundle="+bundles[0], "--image-path="+image, ids[0])
	}()
	if len(ids) > 1 {
		if err := waitSandbox(ctx, r, ids[0], done); err != nil {
			return err
		}
	}
	for i := 1; i < len(ids); i++ {
		if err := r.run(ctx, "create", "--bundle="+bundles[i], ids[i]); err != nil {
			return errors.Join(err, <-done)
		}
		if err := r.run(ctx, "restore", "--detach", "--bundle="+bundles[i], "--image-path="+image, ids[i]); err != nil {
			return errors.Join(err, <-done)
		}
	}
	return <-done
}

// waitSandbox waits until runsc has recorded the sandbox container ids[0]: only then can other
// containers be created in it. It returns the sandbox restore's error if that ends first.
func waitSandbox(ctx context.Context, r Runsc, id string, done chan error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if r.run(ctx, "state", id) == nil {
			return nil
		}
		select {
		case err := <-done:
			if err == nil {
				err = fmt.Errorf("runsc restore of %s ended before the sandbox appeared", id)
			}
			return err
		case <-ctx.Done():
			return errors.Join(ctx.Err(), <-done)
		case <-tick.C:
		}
	}
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
		if err := copyTree(filepath.Join(o.Dir, rel), sources[i]); err != nil {
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
