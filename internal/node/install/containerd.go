// Package install puts kubox's runsc and gVisor shim on a stock containerd node and registers
// them as the kubox-runsc runtime handler through a containerd config drop-in (the imports
// setting), and undoes it. It runs as root on the node: every path is resolved beneath a
// directory fd with openat2 (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), files are replaced by an
// atomic rename, and a link where it writes is refused.
package install

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/kubox-dev/kubox/api/contract"
)

// Handler is the runtime handler the drop-in registers and the RuntimeClass names.
const Handler = "kubox-runsc"

// Paths on the host, relative to the host root. Everything kubox writes lives under kuboxDir,
// except the one imports line added to containerd's own config.
const (
	kuboxDir        = "opt/kubox"
	etcDir          = kuboxDir + "/etc"
	dropInName      = "containerd-kubox-runsc.toml"
	backupName      = "containerd-config.toml.orig"
	runscConfigName = "runsc.toml"
	// DefaultContainerdConfig is containerd's config file.
	DefaultContainerdConfig = "etc/containerd/config.toml"
)

// Containerd installs the drop-in into the containerd whose host filesystem is at HostRoot.
type Containerd struct {
	// HostRoot is where the node's root filesystem is mounted (a hostPath "/" in the Pod).
	HostRoot string
	// Config is containerd's config file relative to HostRoot; empty: DefaultContainerdConfig.
	Config string
	// SnapshotRoot and ManifestKey are the shim's kubox_snapshot_root and kubox_manifest_key.
	SnapshotRoot, ManifestKey string
	// RunscRoot is runsc's root (kubox-node's --runsc-root); empty: the shim's default,
	// /run/containerd/runsc.
	RunscRoot string
}

func (c Containerd) configPath() string {
	if c.Config == "" {
		return DefaultContainerdConfig
	}
	return c.Config
}

func abs(rel string) string { return "/" + rel }

// DropIn renders the containerd drop-in (config version 3) that registers Handler.
func DropIn() string {
	const t = "plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes." + Handler
	return fmt.Sprintf(`# Written by kubox-node (docs/install.md); removed by "kubox-node uninstall".
version = 3

[%s]
  runtime_type = "io.containerd.runsc.v1"
  runtime_path = %q
  pod_annotations = [%q]
  [%s.options]
    TypeUrl = "io.containerd.runsc.v1.options"
    ConfigPath = %q
`, t, abs(kuboxDir+"/bin/containerd-shim-runsc-v1"), contract.RestoreImageAnnotation, t, abs(etcDir+"/"+runscConfigName))
}

// RunscConfig renders the shim's options file.
func (c Containerd) RunscConfig() string {
	root := ""
	if c.RunscRoot != "" {
		root = fmt.Sprintf("root = %q\n", c.RunscRoot)
	}
	return fmt.Sprintf(`# gVisor shim options for kubox (written by kubox-node)
binary_name = %q
%skubox_snapshot_root = %q
kubox_manifest_key = %q
[runsc_config]
`, abs(kuboxDir+"/bin/runsc"), root, c.SnapshotRoot, c.ManifestKey)
}

// Install writes the drop-in and adds it to containerd's imports if absent, keeping the
// original config's bytes for Uninstall. It reports whether anything changed (containerd
// must then be restarted).
func (c Containerd) Install() (bool, error) {
	h, err := openHost(c.HostRoot)
	if err != nil {
		return false, err
	}
	defer h.close()
	etc, err := h.mkdirAll(etcDir)
	if err != nil {
		return false, err
	}
	defer closeFD(etc)
	changed := false
	for name, data := range map[string]string{dropInName: DropIn(), runscConfigName: c.RunscConfig()} {
		w, err := writeIfDiffers(etc, name, []byte(data), 0o644)
		if err != nil {
			return false, fmt.Errorf("write %s: %w", abs(etcDir+"/"+name), err)
		}
		changed = changed || w
	}
	orig, err := h.readFile(c.configPath())
	if err != nil {
		return false, fmt.Errorf("read containerd's config %s: %w", abs(c.configPath()), err)
	}
	edited, err := addImport(orig, abs(etcDir+"/"+dropInName))
	if err != nil {
		return false, fmt.Errorf("containerd's config %s: %w", abs(c.configPath()), err)
	}
	if edited == nil {
		return changed, nil
	}
	if err := writeAtomic(etc, backupName, orig, 0o600); err != nil {
		return false, fmt.Errorf("keep the original of %s: %w", abs(c.configPath()), err)
	}
	if err := h.writeFile(c.configPath(), edited); err != nil {
		return false, fmt.Errorf("write containerd's config %s: %w", abs(c.configPath()), err)
	}
	return true, nil
}

// Uninstall restores containerd's config byte-for-byte and removes the files Install wrote.
// With nothing installed it does nothing.
func (c Containerd) Uninstall() error {
	h, err := openHost(c.HostRoot)
	if err != nil {
		return err
	}
	defer h.close()
	etc, err := h.openDir(etcDir)
	if errors.Is(err, errNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closeFD(etc)
	orig, err := readAt(etc, backupName, maxConfigBytes)
	switch {
	case errors.Is(err, errNotExist):
	case err != nil:
		return fmt.Errorf("read the original of %s: %w", abs(c.configPath()), err)
	default:
		cur, err := h.readFile(c.configPath())
		if err != nil {
			return fmt.Errorf("read containerd's config %s: %w", abs(c.configPath()), err)
		}
		want, err := addImport(orig, abs(etcDir+"/"+dropInName))
		if err != nil || (want != nil && !bytes.Equal(cur, want)) {
			return fmt.Errorf("containerd's config %s changed since kubox-node installed: remove %q from its imports by hand, then delete %s",
				abs(c.configPath()), abs(etcDir+"/"+dropInName), abs(etcDir+"/"+backupName))
		}
		if err := h.writeFile(c.configPath(), orig); err != nil {
			return fmt.Errorf("restore containerd's config %s: %w", abs(c.configPath()), err)
		}
	}
	for _, name := range []string{dropInName, runscConfigName, backupName, restartName} {
		if err := unlinkAt(etc, name); err != nil {
			return fmt.Errorf("remove %s: %w", abs(etcDir+"/"+name), err)
		}
	}
	return nil
}

// restartName marks a restart of containerd that Install's changes still wait for.
const restartName = "restart-pending"

// MarkRestart records that containerd must be restarted to load what Install wrote, so that a
// retry after a failed restart restarts again rather than finding nothing changed.
func (c Containerd) MarkRestart() error { return c.restartMarker(true) }

// RestartDone removes the mark once containerd answers after its restart.
func (c Containerd) RestartDone() error { return c.restartMarker(false) }

// RestartPending reports whether a restart was marked and not done.
func (c Containerd) RestartPending() (bool, error) {
	h, err := openHost(c.HostRoot)
	if err != nil {
		return false, err
	}
	defer h.close()
	_, err = h.readFile(etcDir + "/" + restartName)
	if errors.Is(err, errNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (c Containerd) restartMarker(set bool) error {
	h, err := openHost(c.HostRoot)
	if err != nil {
		return err
	}
	defer h.close()
	etc, err := h.mkdirAll(etcDir)
	if err != nil {
		return err
	}
	defer closeFD(etc)
	if set {
		return writeAtomic(etc, restartName, []byte("kubox-node install changed containerd's config; restart containerd\n"), 0o600)
	}
	return unlinkAt(etc, restartName)
}
