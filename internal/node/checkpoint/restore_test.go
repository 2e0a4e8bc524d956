package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recordingRunsc is fakeRunsc that also appends each call's arguments to a file; with FAILON set
// in the environment, the call whose subcommand equals it fails.
func recordingRunsc(t *testing.T) (Runsc, string) {
	t.Helper()
	r := fakeRunsc(t)
	calls := filepath.Join(t.TempDir(), "calls")
	wrapper := filepath.Join(t.TempDir(), "runsc")
	script := "#!/bin/sh\n" +
		`[ "$1" = --version ] || echo "$*" >> ` + calls + "\n" +
		`for a in "$@"; do [ -n "$FAILON" ] && [ "$a" = "$FAILON" ] && exit 1; done` + "\n" +
		`exec ` + r.Binary + ` "$@"` + "\n"
	must(t, os.WriteFile(wrapper, []byte(script), 0o755))
	r.Binary = wrapper
	return r, calls
}

func checkpointed(t *testing.T) string {
	t.Helper()
	taskDir, podDir := fakePod(t)
	dir := filepath.Join(t.TempDir(), "ck")
	if _, err := Checkpoint(context.Background(), fakeRunsc(t), Options{SandboxID: "sb1", Dir: dir, TaskDir: taskDir, PodDirs: []string{podDir}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRestoreOrderAndBundles(t *testing.T) {
	dir := checkpointed(t)
	r, calls := recordingRunsc(t)
	work := t.TempDir()
	var roots []string
	res, err := Restore(context.Background(), r, RestoreOptions{Dir: dir, ID: "new", WorkDir: work,
		RootFS: func(_ context.Context, c Container, target string) error {
			roots = append(roots, c.Image+" "+filepath.Base(filepath.Dir(target)))
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kubox.local/pause:dev new", "kubox.local/python:dev new-py"}, roots); diff != "" {
		t.Errorf("root filesystems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"": "new", "py": "new-py"}, res.Containers); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(calls)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		got = append(got, f[1]+" "+f[2]+" "+f[len(f)-1])
	}
	want := []string{"--ignore-cgroups restore new", "--ignore-cgroups create new-py", "--ignore-cgroups restore new-py"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runsc calls (-want +got):\n%s", diff)
	}
	s, err := readSpec(filepath.Join(res.Bundles["new-py"], "config.json"))
	must(t, err)
	hosts, _ := s.mounts()[1]["source"].(string)
	if content, err := os.ReadFile(hosts); err != nil || !strings.HasPrefix(hosts, work) || string(content) != "127.0.0.1 localhost\n" {
		t.Errorf("/etc/hosts comes from %s (%q, %v), want the restore's own copy", hosts, content, err)
	}
	if s.annotation(annSandboxID) != "new" {
		t.Errorf("sandbox-id annotation = %q, want new", s.annotation(annSandboxID))
	}
	if _, err := Verify(dir); err != nil {
		t.Errorf("the restore changed the checkpoint: %v", err)
	}
}

func TestRestoreFailureRemovesTheSandbox(t *testing.T) {
	dir := checkpointed(t)
	r, calls := recordingRunsc(t)
	t.Setenv("FAILON", "create")
	_, err := Restore(context.Background(), r, RestoreOptions{Dir: dir, ID: "new", WorkDir: t.TempDir(),
		RootFS: func(context.Context, Container, string) error { return nil }})
	if err == nil {
		t.Fatal("Restore succeeded though runsc create failed")
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "delete --force new\n") {
		t.Errorf("the half-restored sandbox was not deleted; runsc calls:\n%s", b)
	}
	if _, err := Verify(dir); err != nil {
		t.Errorf("a failed restore changed the checkpoint: %v", err)
	}
}

func TestRestoreRefusesAnIncompleteCheckpoint(t *testing.T) {
	dir := checkpointed(t)
	must(t, os.Remove(filepath.Join(dir, "image", "checkpoint.img")))
	r, calls := recordingRunsc(t)
	_, err := Restore(context.Background(), r, RestoreOptions{Dir: dir, ID: "new", WorkDir: t.TempDir(),
		RootFS: func(context.Context, Container, string) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "checkpoint incomplete") {
		t.Errorf("err = %v, want ErrIncomplete", err)
	}
	if b, _ := os.ReadFile(calls); len(b) > 0 {
		t.Errorf("runsc ran for an incomplete checkpoint:\n%s", b)
	}
}
