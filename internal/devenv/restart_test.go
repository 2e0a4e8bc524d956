package devenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJoinCgroups: the process writes itself into the cgroup of the given process in every
// hierarchy mounted below the root (here a folder standing for /sys/fs/cgroup).
func TestJoinCgroups(t *testing.T) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(line, ":", 3)
		dir := pidCgroupDirs(root, f[1], f[2])[0]
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		want[dir] = strconv.Itoa(os.Getpid())
	}
	if err := joinCgroups(os.Getpid(), root); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for dir := range want {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		got[dir] = string(b)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cgroup.procs written (-want +got):\n%s", diff)
	}
}

func TestPidCgroupDirs(t *testing.T) {
	for name, tc := range map[string]struct {
		controllers, path string
		want              []string
	}{
		"v1 controller": {"memory", "/a", []string{"/sys/fs/cgroup/memory/a"}},
		"named":         {"name=systemd", "/", []string{"/sys/fs/cgroup/systemd"}},
		"unified":       {"", "/b", []string{"/sys/fs/cgroup/unified/b", "/sys/fs/cgroup/b"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pidCgroupDirs("/sys/fs/cgroup", tc.controllers, tc.path)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
