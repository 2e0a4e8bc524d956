package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// podWithMount writes containerd's task folder for a Pod whose container "py" has one bind mount,
// at dest, from src below the Pod folder podDir; fill makes src's content.
func podWithMount(t *testing.T, podDir, src, dest string, fill func(src string)) (taskDir string) {
	t.Helper()
	taskDir = t.TempDir()
	must(t, os.MkdirAll(filepath.Dir(src), 0o755))
	fill(src)
	writeBundle(t, taskDir, "sb1", map[string]any{annContainerType: "sandbox", annSandboxID: "sb1", annSandboxName: "p", annSandboxNS: "ns"}, nil)
	writeBundle(t, taskDir, "c1", map[string]any{annContainerType: "container", annSandboxID: "sb1", annContainerName: "py"},
		[]any{map[string]any{"destination": dest, "type": "bind", "source": src}})
	return taskDir
}

// subPathOf is the kubelet's bind mount of a subPath of the Pod's volume scratch in container py.
func subPathOf(podDir string) string {
	return filepath.Join(podDir, "uid-p", "volume-subpaths", "scratch", "py", "0")
}

// TestSubPathLinksAreNeverFollowed performs hole 6 of issue 36: a sandbox mounts a folder of its
// emptyDir as a subPath (the kubelet bind-mounts it from .../volume-subpaths/, not .../volumes/)
// and plants links there to the node's files. kubox-node, root on the node, must copy each link as
// the link it is: the snapshot never holds the node file's bytes, and nothing is read through
// /proc (kcore, kubox-node's own environment).
func TestSubPathLinksAreNeverFollowed(t *testing.T) {
	node := t.TempDir()
	pki := filepath.Join(node, "pki")
	must(t, os.MkdirAll(pki, 0o700))
	must(t, os.WriteFile(filepath.Join(pki, "kubelet.key"), []byte("node-secret"), 0o600))
	for name, target := range map[string]string{
		"a node file":                filepath.Join(pki, "kubelet.key"),
		"a node folder":              pki,
		"/proc/kcore":                "/proc/kcore",
		"kubox-node's environment":   "/proc/self/environ",
		"a relative way out":         "../../../../../../../../" + filepath.Join(pki, "kubelet.key"),
		"the init process's root fs": "/proc/1/root/etc/hostname",
	} {
		t.Run(name, func(t *testing.T) {
			podDir := t.TempDir()
			taskDir := podWithMount(t, podDir, subPathOf(podDir), "/work", func(src string) {
				must(t, os.MkdirAll(src, 0o755))
				must(t, os.WriteFile(filepath.Join(src, "notes.txt"), []byte("mine"), 0o644))
				must(t, os.Symlink(target, filepath.Join(src, "steal")))
			})
			dir := filepath.Join(t.TempDir(), "ck")
			m, err := Checkpoint(t.Context(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir}})
			if err != nil {
				t.Fatalf("Checkpoint: %v; want the subPath copied with its link as a link", err)
			}
			copied := filepath.Join(dir, m.Containers[1].Copied[0])
			if got, err := os.Readlink(filepath.Join(copied, "steal")); err != nil || got != target {
				t.Errorf("the copy of steal: link %q, %v; want the link to %q, never what it names", got, err, target)
			}
			if b, err := os.ReadFile(filepath.Join(copied, "notes.txt")); err != nil || string(b) != "mine" {
				t.Errorf("the copy of notes.txt: %q, %v", b, err)
			}
		})
	}
}

// TestAMountWhoseSourceIsALinkIsRefused: the source of a bind mount of the Pod is a link the
// sandbox made to a node file. Bind-mounting it at restore would follow it on the node, so the
// checkpoint neither follows it nor keeps it: it fails, naming the mount.
func TestAMountWhoseSourceIsALinkIsRefused(t *testing.T) {
	node := t.TempDir()
	secret := filepath.Join(node, "kubelet.key")
	must(t, os.WriteFile(secret, []byte("node-secret"), 0o600))
	podDir := t.TempDir()
	taskDir := podWithMount(t, podDir, subPathOf(podDir), "/work/key", func(src string) { must(t, os.Symlink(secret, src)) })
	dir := filepath.Join(t.TempDir(), "ck")
	_, err := Checkpoint(t.Context(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir}})
	if err == nil || !strings.Contains(err.Error(), "mount /work/key") || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Checkpoint of a mount whose source is a link: %v; want a refusal naming the mount", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused checkpoint left %s: %v", dir, err)
	}
}

// TestKubeletLinksAreFollowedOnlyWithinTheirVolume: the kubelet's projected volume is a tree of
// links into a timestamped folder, which the copy follows; a link in it that leads out of the
// volume is copied as the link (root never reads the node through a volume's links).
func TestKubeletLinksAreFollowedOnlyWithinTheirVolume(t *testing.T) {
	node := t.TempDir()
	secret := filepath.Join(node, "kubelet.key")
	must(t, os.WriteFile(secret, []byte("node-secret"), 0o600))
	podDir := t.TempDir()
	src := filepath.Join(podDir, tokenVolume)
	taskDir := podWithMount(t, podDir, src, "/run/secrets", func(src string) {
		must(t, os.MkdirAll(filepath.Join(src, "..2026"), 0o755))
		must(t, os.WriteFile(filepath.Join(src, "..2026", "token"), []byte("jwt"), 0o644))
		must(t, os.Symlink("..2026", filepath.Join(src, "..data")))
		must(t, os.Symlink("..data/token", filepath.Join(src, "token")))
		must(t, os.Symlink(secret, filepath.Join(src, "escape")))
	})
	dir := filepath.Join(t.TempDir(), "ck")
	m, err := Checkpoint(t.Context(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir}})
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, m.Containers[1].Copied[0])
	if b, err := os.ReadFile(filepath.Join(copied, "token")); err != nil || string(b) != "jwt" {
		t.Errorf("the copy of the kubelet's token link: %q, %v; want the file it names", b, err)
	}
	if st, err := os.Lstat(filepath.Join(copied, "token")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the copy of the kubelet's token link: %v, %v; want a regular file", st, err)
	}
	if got, err := os.Readlink(filepath.Join(copied, "escape")); err != nil || got != secret {
		t.Errorf("the copy of a link out of the volume: %q, %v; want the link to %q, not followed", got, err, secret)
	}
}

// TestCopiesAreBounded: a sandbox that makes a huge (sparse) file, or many files, in a volume the
// checkpoint copies cannot fill the node's disk: past Options.MaxCopyBytes the checkpoint fails,
// naming the mount and the limit, and leaves nothing.
func TestCopiesAreBounded(t *testing.T) {
	const limit = 1 << 20
	for name, tc := range map[string]struct {
		fill func(t *testing.T, src string)
		ok   bool
	}{
		"a sparse file past the limit": {fill: func(t *testing.T, src string) {
			f, err := os.Create(filepath.Join(src, "huge"))
			must(t, err)
			must(t, f.Truncate(64<<20))
			must(t, f.Close())
		}},
		"files past the limit together": {fill: func(t *testing.T, src string) {
			for _, n := range []string{"a", "b", "c"} {
				must(t, os.WriteFile(filepath.Join(src, n), make([]byte, 400<<10), 0o644))
			}
		}},
		"many empty files": {fill: func(t *testing.T, src string) {
			for i := range 300 {
				must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), nil, 0o644))
			}
		}},
		"within the limit": {ok: true, fill: func(t *testing.T, src string) {
			must(t, os.WriteFile(filepath.Join(src, "a"), make([]byte, 100<<10), 0o644))
		}},
	} {
		t.Run(name, func(t *testing.T) {
			podDir := t.TempDir()
			src := filepath.Join(podDir, "uid-p", "volumes", "kubernetes.io~empty-dir", "scratch")
			taskDir := podWithMount(t, podDir, src, "/scratch", func(src string) {
				must(t, os.MkdirAll(src, 0o755))
				tc.fill(t, src)
			})
			dir := filepath.Join(t.TempDir(), "ck")
			_, err := Checkpoint(t.Context(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir},
				MaxCopyBytes: limit})
			if tc.ok {
				if err != nil {
					t.Fatalf("Checkpoint within the limit: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "mount /scratch") || !strings.Contains(err.Error(), "1048576 bytes") {
				t.Errorf("Checkpoint past the copy limit: %v; want a refusal naming the mount and the limit", err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused checkpoint left %s: %v", dir, err)
			}
		})
	}
}
