package devenv

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMissingPackages(t *testing.T) {
	present := map[string]bool{"/usr/sbin/runc": true, "/bin/ip": true, "/usr/bin/patch": true}
	got := MissingPackages(func(p string) bool { return present[p] })
	if diff := cmp.Diff("apt-get install -y --no-install-recommends containernetworking-plugins busybox-static", AptInstallLine(got)); diff != "" {
		t.Errorf("apt line (-want +got):\n%s", diff)
	}
}

func TestMissingControllersV1(t *testing.T) {
	tests := map[string]struct {
		procCgroups string
		want        []string
	}{
		"all enabled": {procCgroups: "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\ncpu\t1\t1\t1\ncpuacct\t2\t1\t1\nmemory\t4\t1\t1\ndevices\t5\t1\t1\nfreezer\t6\t1\t1\npids\t8\t1\t1\n"},
		"memory disabled, pids absent": {
			procCgroups: "cpuset\t3\t1\t1\ncpu\t1\t1\t1\ncpuacct\t2\t1\t1\nmemory\t4\t1\t0\ndevices\t5\t1\t1\nfreezer\t6\t1\t1\n",
			want:        []string{"memory", "pids"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MissingControllersV1(tc.procCgroups)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingControllersV2(t *testing.T) {
	if diff := cmp.Diff([]string{"pids"}, MissingControllersV2("cpuset cpu io memory hugetlb\n")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPortConflicts(t *testing.T) {
	taken := map[int]bool{16443: true, 11250: true}
	got := PortConflicts(DefaultConfig().Ports, func(port int) error {
		if taken[port] {
			return errors.New("address already in use")
		}
		return nil
	})
	want := []string{
		"port 11250 (kubelet) is in use: address already in use",
		"port 16443 (kube-apiserver) is in use: address already in use",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSubnetConflicts(t *testing.T) {
	host := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.88.0.0/24")}
	got := SubnetConflicts(netip.MustParsePrefix("10.77.0.0/24"), host)
	if diff := cmp.Diff([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCheckSocketPath(t *testing.T) {
	if err := CheckSocketPath(NewLayout("/var/lib/kubox-dev")); err != nil {
		t.Errorf("default state dir: %v", err)
	}
	err := CheckSocketPath(NewLayout("/" + strings.Repeat("x", 100)))
	if err == nil || !strings.Contains(err.Error(), "--state-dir") {
		t.Errorf("long state dir: got %v, want an error that names --state-dir", err)
	}
}

func TestProblemsErr(t *testing.T) {
	if err := (Problems{}).Err(); err != nil {
		t.Errorf("no problems: %v", err)
	}
	err := Problems{"a", "b"}.Err()
	if err == nil || err.Error() != "preflight failed:\n  - a\n  - b" {
		t.Errorf("got %v", err)
	}
}
