package devenv

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const mountinfo = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
31 22 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 22 0:28 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
40 22 0:50 / /var/lib/kubox-dev/kubelet/pods/u1/volumes/kubernetes.io~projected/kube-api-access rw - tmpfs tmpfs rw
41 22 0:51 / /var/lib/kubox-dev/containerd/state/io.containerd.grpc.v1.cri/netns/cni-1 rw - nsfs nsfs rw
42 22 0:52 / /var/lib/kubox-dev/kubelet rw - ext4 /dev/vda rw
43 22 0:53 / /var/lib/kubox-dev-other/x rw - tmpfs tmpfs rw
44 22 0:54 / /tmp/with\040space rw - tmpfs tmpfs rw
`

func TestMountsUnder(t *testing.T) {
	got := MountsUnder(ParseMountinfo(mountinfo), "/var/lib/kubox-dev")
	want := []string{
		"/var/lib/kubox-dev/kubelet/pods/u1/volumes/kubernetes.io~projected/kube-api-access",
		"/var/lib/kubox-dev/containerd/state/io.containerd.grpc.v1.cri/netns/cni-1",
		"/var/lib/kubox-dev/kubelet",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseMountinfo(t *testing.T) {
	mounts := ParseMountinfo(mountinfo)
	want := []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"}
	if diff := cmp.Diff(want, Hierarchies(mounts)); diff != "" {
		t.Errorf("hierarchies (-want +got):\n%s", diff)
	}
	if got := mounts[len(mounts)-1].Point; got != "/tmp/with space" {
		t.Errorf("escaped mount point = %q", got)
	}
}

func TestParseStat(t *testing.T) {
	stat := "1234 (kube (api) server) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 12 0 98765 1000 200"
	state, start, err := parseStat(stat)
	if err != nil || state != "S" || start != 98765 {
		t.Errorf("parseStat = %q, %d, %v; want S, 98765, nil", state, start, err)
	}
}
