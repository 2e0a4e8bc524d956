package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeRunsc writes a runsc stand-in: --version prints a version; every other command is
// appended to $RUNSC_LOG when it is set; pause, and a checkpoint that does not leave the sandbox
// running, create the file $LATE when it is set (a file a process writes just before the sandbox
// stops); checkpoint writes image files to --image-path, or fails when FAIL is in the
// environment; anything else succeeds.
func fakeRunsc(t *testing.T) Runsc {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "runsc")
	script := `#!/bin/sh
[ "$1" = --version ] && { echo "runsc version test"; echo "spec: 1.2.1"; exit 0; }
shift
[ -n "$RUNSC_LOG" ] && echo "$1" >> "$RUNSC_LOG"
case " $* " in *" pause "*|*" --leave-running=false "*) [ -n "$LATE" ] && echo late > "$LATE";; esac
case " $* " in *" checkpoint "*) ;; *) exit 0;; esac
[ -n "$FAIL" ] && { echo "checkpoint failed: $FAIL" >&2; exit 128; }
for a in "$@"; do case $a in --image-path=*) d=${a#--image-path=};; esac; done
mkdir -p "$d" && echo state > "$d/checkpoint.img" && head -c 8192 /dev/zero > "$d/pages.img" && echo meta > "$d/pages_meta.img"
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Runsc{Binary: bin, Root: t.TempDir()}
}

// tokenVolume is where, below a Pod folder, fakePod puts the projected service-account token.
const tokenVolume = "uid-p/volumes/kubernetes.io~projected/kube-api-access"

// fakePod writes containerd's task directory for a Pod (a sandbox and a container "py") and a
// per-Pod folder with the files the kubelet bind-mounts, and returns both.
func fakePod(t *testing.T) (taskDir, podDir string) {
	t.Helper()
	taskDir, podDir = t.TempDir(), t.TempDir()
	token := filepath.Join(podDir, tokenVolume)
	must(t, os.MkdirAll(filepath.Join(token, "..2026"), 0o755))
	must(t, os.WriteFile(filepath.Join(token, "..2026", "token"), []byte("jwt"), 0o644))
	must(t, os.Symlink("..2026/token", filepath.Join(token, "token")))
	must(t, os.WriteFile(filepath.Join(podDir, "etc-hosts"), []byte("127.0.0.1 localhost\n"), 0o644))
	writeBundle(t, taskDir, "sb1", map[string]any{
		annContainerType: "sandbox", annSandboxID: "sb1", annSandboxName: "p", annSandboxNS: "ns", annSandboxUID: "uid-p",
		annSandboxImage: "kubox.local/pause:dev"}, nil)
	writeBundle(t, taskDir, "c1", map[string]any{
		annContainerType: "container", annSandboxID: "sb1", annContainerName: "py", annImageName: "kubox.local/python:dev"},
		[]any{
			map[string]any{"destination": "/proc", "type": "proc", "source": "proc"},
			map[string]any{"destination": "/etc/hosts", "type": "bind", "source": filepath.Join(podDir, "etc-hosts")},
			map[string]any{"destination": "/data", "type": "bind", "source": "/srv/volume"},
			map[string]any{"destination": "/run/secrets", "type": "bind", "source": token},
		})
	writeBundle(t, taskDir, "other", map[string]any{annContainerType: "sandbox", annSandboxID: "other"}, nil)
	return taskDir, podDir
}

func writeBundle(t *testing.T, taskDir, id string, ann map[string]any, mounts []any) {
	t.Helper()
	s := map[string]any{
		"root":        map[string]any{"path": "rootfs"},
		"annotations": ann,
		"mounts":      mounts,
		"linux": map[string]any{"cgroupsPath": "/kubox/pod/" + id, "namespaces": []any{
			map[string]any{"type": "pid"}, map[string]any{"type": "network", "path": "/proc/7/ns/net"}}},
	}
	b, _ := json.Marshal(s)
	must(t, os.MkdirAll(filepath.Join(taskDir, id), 0o755))
	must(t, os.WriteFile(filepath.Join(taskDir, id, "config.json"), b, 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointWritesAVerifiedDirectory(t *testing.T) {
	taskDir, podDir := fakePod(t)
	dir := filepath.Join(t.TempDir(), "ck")
	m, err := Checkpoint(context.Background(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir}})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range m.Containers {
		names = append(names, c.ID+":"+c.Name+":"+c.Image)
	}
	if diff := cmp.Diff([]string{"sb1::kubox.local/pause:dev", "c1:py:kubox.local/python:dev"}, names); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int]string{1: "files/1/1", 3: "files/1/3"}, m.Containers[1].Copied); diff != "" {
		t.Errorf("copied mounts (-want +got):\n%s", diff)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "files/1/3/token")); err != nil || string(b) != "jwt" {
		t.Errorf("the token link was not copied as a file: %q %v", b, err)
	}
	if m.Pod != (PodRef{Namespace: "ns", Name: "p", UID: "uid-p"}) {
		t.Errorf("manifest pod %+v, want ns/p uid-p", m.Pod)
	}
	if m.Kind != Full || m.Runsc != "runsc version test" || m.Size < 8192 || len(m.SHA256) != 64 || m.Duration <= 0 {
		t.Errorf("manifest: kind %s runsc %q size %d sha256 %q duration %v", m.Kind, m.Runsc, m.Size, m.SHA256, m.Duration)
	}
}

func TestCheckpointFailureLeavesNothing(t *testing.T) {
	taskDir, podDir := fakePod(t)
	dir := filepath.Join(t.TempDir(), "ck")
	t.Setenv("FAIL", "no space left on device")
	_, err := Checkpoint(context.Background(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir}})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("err = %v, want runsc's message", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed checkpoint left %s behind (%v)", dir, err)
	}
}

// TestCheckpointCopiesFilesWhileStopped checks that the files are copied once the sandbox has
// stopped (after a checkpoint that ends it) or while runsc holds it paused (a checkpoint that
// leaves it running), so they hold what its processes wrote up to the memory image's moment, and
// that a paused sandbox is resumed after its checkpoint, failed or not.
func TestCheckpointCopiesFilesWhileStopped(t *testing.T) {
	for _, tc := range []struct {
		name         string
		leaveRunning bool
		fail         string
		want         string
	}{
		{"pause", false, "", "checkpoint"},
		{"snapshot", true, "", "pause checkpoint resume"},
		{"failed snapshot", true, "disk full", "pause checkpoint resume"},
		{"failed pause", false, "disk full", "checkpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taskDir, podDir := fakePod(t)
			log := filepath.Join(t.TempDir(), "runsc.log")
			t.Setenv("RUNSC_LOG", log)
			t.Setenv("LATE", filepath.Join(podDir, tokenVolume, "late"))
			if tc.fail != "" {
				t.Setenv("FAIL", tc.fail)
			}
			dir := filepath.Join(t.TempDir(), "ck")
			_, err := Checkpoint(context.Background(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir,
				PodDirs: []string{podDir}, LeaveRunning: tc.leaveRunning})
			if (err != nil) != (tc.fail != "") {
				t.Fatalf("err = %v, want failure %t", err, tc.fail != "")
			}
			b, _ := os.ReadFile(log)
			if got := strings.Join(strings.Fields(string(b)), " "); got != tc.want {
				t.Errorf("runsc commands %q, want %q", got, tc.want)
			}
			if tc.fail == "" {
				if b, err := os.ReadFile(filepath.Join(dir, "files/1/3/late")); err != nil || string(b) != "late\n" {
					t.Errorf("a file written before the pause is missing from the copy: %q %v", b, err)
				}
			}
		})
	}
}

func TestCheckpointUnknownSandbox(t *testing.T) {
	taskDir, _ := fakePod(t)
	_, err := Checkpoint(context.Background(), fakeRunsc(t), Options{SandboxID: "c1", Dir: filepath.Join(t.TempDir(), "ck"), TaskDir: taskDir})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound (c1 is a container, not a sandbox)", err)
	}
}

func TestVerifyCatchesEveryDamage(t *testing.T) {
	for name, damage := range map[string]func(dir string) error{
		"a byte changed": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "image/checkpoint.img"), []byte("stale\n"), 0o644)
		},
		"a file missing":  func(dir string) error { return os.Remove(filepath.Join(dir, "image/pages.img")) },
		"a file too many": func(dir string) error { return os.WriteFile(filepath.Join(dir, "image/extra"), nil, 0o644) },
		"no manifest":     func(dir string) error { return os.Remove(filepath.Join(dir, ManifestFile)) },
		"truncated": func(dir string) error {
			return os.Truncate(filepath.Join(dir, "image/pages.img"), 4096)
		},
	} {
		t.Run(name, func(t *testing.T) {
			taskDir, podDir := fakePod(t)
			dir := filepath.Join(t.TempDir(), "ck")
			if _, err := Checkpoint(context.Background(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir}}); err != nil {
				t.Fatal(err)
			}
			must(t, damage(dir))
			if _, err := Verify(dir); !errors.Is(err, ErrIncomplete) {
				t.Errorf("Verify = %v, want ErrIncomplete", err)
			}
		})
	}
}

func TestVerifyNeedsTheImageOfItsKind(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, imageDir), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, imageDir, "pages.img"), []byte("x"), 0o644))
	must(t, writeManifest(dir, &Manifest{Version: 1, Kind: Full}))
	if _, err := Verify(dir); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "checkpoint.img") {
		t.Errorf("Verify = %v, want checkpoint.img missing", err)
	}
}

func TestPrivateMount(t *testing.T) {
	pods := []string{"/k/pods"}
	for src, want := range map[string]struct{ private, kubelets bool }{
		"/k/pods/u/etc-hosts": {private: true},
		"/k/pods/u/volumes/kubernetes.io~projected/kube-api-access-x": {private: true, kubelets: true},
		"/k/pods/u/volumes/kubernetes.io~secret/creds":                {private: true, kubelets: true},
		"/k/pods/u/volumes/kubernetes.io~configmap/conf":              {private: true, kubelets: true},
		"/k/pods/u/volumes/kubernetes.io~downward-api/info":           {private: true, kubelets: true},
		"/k/pods/u/volumes/kubernetes.io~projected/x/deeper":          {private: true},
		"/k/pods/u/volumes/kubernetes.io~empty-dir/scratch":           {private: true},
		"/k/pods/u/volume-subpaths/conf/py/0":                         {private: true},
		"/k/pods/u/volume-subpaths/x/volumes/kubernetes.io~secret/y":  {private: true},
		"/k/pods/u/containers/py/abc":                                 {private: true},
		"/k/pods/u/volumes/kubernetes.io~csi/pvc-1/mount":             {},
		"/k/pods/../../etc/volumes/kubernetes.io~secret/x":            {},
		"/tmp/hostpath_pv/pvc-1":                                      {},
		"/k/podsX/u/etc-hosts":                                        {},
	} {
		pm, got := privateMountOf(map[string]any{"type": "bind", "source": src}, pods)
		if got != want.private || pm.kubelets != want.kubelets {
			t.Errorf("privateMountOf(%s) = %+v, %t; want private %t, kubelets %t", src, pm, got, want.private, want.kubelets)
		}
	}
}

// TestTenantLinksAreNotFollowed: a link the sandbox made in its emptyDir to a file of the node is
// copied as the link, never as the node file's content; the kubelet's links (a projected token)
// are followed within their volume. The manifest records the link, and Verify notices a link
// changed.
func TestTenantLinksAreNotFollowed(t *testing.T) {
	node := t.TempDir()
	secret := filepath.Join(node, "shadow")
	must(t, os.WriteFile(secret, []byte("root:hash"), 0o600))
	scratch := filepath.Join(node, "scratch")
	must(t, os.MkdirAll(filepath.Join(scratch, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(scratch, "sub", "run.sh"), []byte("#!/bin/sh"), 0o755))
	must(t, os.Symlink(secret, filepath.Join(scratch, "steal")))
	must(t, os.Symlink("sub/run.sh", filepath.Join(scratch, "run")))
	dir := t.TempDir()
	must(t, copyTree(scratch, filepath.Join(dir, "files", "0"), false, newCopyBudget(t.Context(), 0)))
	for name, want := range map[string]string{"steal": secret, "run": "sub/run.sh"} {
		if got, err := os.Readlink(filepath.Join(dir, "files", "0", name)); err != nil || got != want {
			t.Errorf("copy of %s: link %q, %v; want the link to %q, not the file", name, got, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "files", "0", "sub", "run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("copy of sub/run.sh: %v, %v; want mode 0755", st, err)
	}
	kubelet := t.TempDir()
	must(t, os.WriteFile(filepath.Join(kubelet, "..token"), []byte("jwt"), 0o600))
	must(t, os.Symlink("..token", filepath.Join(kubelet, "token")))
	must(t, copyTree(kubelet, filepath.Join(dir, "files", "1"), true, newCopyBudget(t.Context(), 0)))
	if b, err := os.ReadFile(filepath.Join(dir, "files", "1", "token")); err != nil || string(b) != "jwt" {
		t.Errorf("copy of the kubelet's link: %q, %v; want the file it names", b, err)
	}

	must(t, os.MkdirAll(filepath.Join(dir, imageDir), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, imageDir, "checkpoint.img"), []byte("x"), 0o644))
	must(t, writeManifest(dir, &Manifest{Version: 1, Kind: Full}))
	m, err := Verify(dir)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if i := slices.IndexFunc(m.Files, func(f File) bool { return f.Path == "files/0/steal" }); i < 0 || m.Files[i].Link != secret || m.Files[i].Size != 0 {
		t.Errorf("manifest files %+v; want files/0/steal as a link to %s", m.Files, secret)
	}
	must(t, os.Remove(filepath.Join(dir, "files", "0", "steal")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "files", "0", "steal")))
	if _, err := Verify(dir); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "files/0/steal") {
		t.Errorf("Verify after a link changed = %v; want ErrIncomplete naming it", err)
	}
}

func TestFindSandbox(t *testing.T) {
	taskDir, _ := fakePod(t)
	for _, uid := range []string{"", "uid-p"} {
		if id, err := FindSandbox(taskDir, "ns", "p", uid); err != nil || id != "sb1" {
			t.Errorf("FindSandbox(uid %q) = %q, %v; want sb1", uid, id, err)
		}
	}
	if _, err := FindSandbox(taskDir, "ns", "q", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindSandbox of a missing pod = %v, want ErrNotFound", err)
	}
	if _, err := FindSandbox(taskDir, "ns", "p", "uid-of-a-later-p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("FindSandbox of another Pod of the same name = %v, want ErrNotFound", err)
	}
}

func TestCheckpointArgs(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{SandboxID: "s", Dir: "/d"}, "checkpoint --image-path=/d/image --leave-running=false s"},
		{Options{SandboxID: "s", Dir: "/d", LeaveRunning: true, Compress: true}, "checkpoint --image-path=/d/image --leave-running=true --compression=flate-best-speed s"},
		{Options{SandboxID: "s", Dir: "/d", Kind: Filesystem, LeaveRunning: true}, "fscheckpoint --image-path=/d/image --leave-running=true s"},
	} {
		if got := strings.Join(checkpointArgs(tc.o), " "); got != tc.want {
			t.Errorf("checkpointArgs(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}

func TestRebaseGivesTheNewSandboxItsOwnEverything(t *testing.T) {
	taskDir, _ := fakePod(t)
	s, err := readSpec(filepath.Join(taskDir, "c1", "config.json"))
	must(t, err)
	rebase(s, "/w/new-py", "new", map[int]string{1: "/w/new-py/files/1"})
	got, _ := json.Marshal(map[string]any{"root": s["root"], "linux": s["linux"], "sandbox": s.annotation(annSandboxID),
		"mounts": []any{s.mounts()[1]["source"], s.mounts()[2]["source"]}})
	want := `{"linux":{"namespaces":[{"type":"pid"},{"type":"network"}]},"mounts":["/w/new-py/files/1","/srv/volume"],` +
		`"root":{"path":"/w/new-py/rootfs"},"sandbox":"new"}`
	if string(got) != want {
		t.Errorf("rebased spec\n got %s\nwant %s", got, want)
	}
}

// TestCheckpointCopiesTheVolumesAskedFor: a volume mount of Options.CopyMounts (a Pod's own
// PersistentVolume) is copied into the checkpoint and listed in Container.Volumes, the sandbox's
// links kept as links; one the Pod does not have fails the checkpoint, which leaves nothing.
func TestCheckpointCopiesTheVolumesAskedFor(t *testing.T) {
	taskDir, podDir := fakePod(t)
	volume := t.TempDir()
	must(t, os.WriteFile(filepath.Join(volume, "notes.txt"), []byte("kept"), 0o644))
	must(t, os.Symlink("/etc/shadow", filepath.Join(volume, "steal")))
	writeBundle(t, taskDir, "c1", map[string]any{
		annContainerType: "container", annSandboxID: "sb1", annContainerName: "py", annImageName: "kubox.local/python:dev"},
		[]any{
			map[string]any{"destination": "/etc/hosts", "type": "bind", "source": filepath.Join(podDir, "etc-hosts")},
			map[string]any{"destination": "/data", "type": "bind", "source": volume},
		})
	dir := filepath.Join(t.TempDir(), "ck")
	m, err := Checkpoint(t.Context(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir},
		CopyMounts: []MountRef{{Container: "py", Path: "/data"}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[int]string{1: "files/1/1"}, m.Containers[1].Volumes); diff != "" {
		t.Errorf("copied volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int]string{0: "files/1/0"}, m.Containers[1].Copied); diff != "" {
		t.Errorf("copied private mounts (-want +got):\n%s", diff)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "files/1/1/notes.txt")); err != nil || string(b) != "kept" {
		t.Errorf("the volume's notes.txt in the checkpoint: %q, %v", b, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "files/1/1/steal")); err != nil || target != "/etc/shadow" {
		t.Errorf("the volume's link in the checkpoint: %q, %v; want the link, not followed", target, err)
	}

	missing := filepath.Join(t.TempDir(), "ck")
	_, err = Checkpoint(t.Context(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: missing, TaskDir: taskDir, PodDirs: []string{podDir},
		CopyMounts: []MountRef{{Container: "py", Path: "/workspace"}}})
	if err == nil || !strings.Contains(err.Error(), `volume mount /workspace of container "py"`) {
		t.Errorf("Checkpoint copying a mount the Pod lacks = %v; want an error naming it", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the failed checkpoint left %s: %v", missing, err)
	}
}
