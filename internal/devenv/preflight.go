package devenv

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// DebPackage is a Debian package the local node needs at run time, with a file that proves it
// is installed.
type DebPackage struct {
	Name  string
	Proof string
}

// DebPackages lists what `up` installs with apt-get when it is missing.
var DebPackages = []DebPackage{
	{"runc", "/usr/sbin/runc"},
	{"containernetworking-plugins", "/usr/lib/cni/bridge"},
	{"busybox-static", "/bin/busybox"},
	{"iproute2", "/bin/ip"},
	{"patch", "/usr/bin/patch"}, // hack/tools/install.sh patches the gVisor shim
}

// MissingPackages returns the packages whose proof file does not exist.
func MissingPackages(exists func(path string) bool) []DebPackage {
	var out []DebPackage
	for _, p := range DebPackages {
		if !exists(p.Proof) {
			out = append(out, p)
		}
	}
	return out
}

// AptInstallLine is the command a person runs to install pkgs by hand.
func AptInstallLine(pkgs []DebPackage) string {
	names := make([]string, len(pkgs))
	for i, p := range pkgs {
		names[i] = p.Name
	}
	return "apt-get install -y --no-install-recommends " + strings.Join(names, " ")
}

// RequiredControllers are the cgroup controllers the kubelet and runc need.
func RequiredControllers(v1 bool) []string {
	if v1 {
		return []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer"}
	}
	return []string{"cpu", "cpuset", "memory", "pids"}
}

// MissingControllersV1 parses /proc/cgroups and returns the required controllers that are absent
// or disabled.
func MissingControllersV1(procCgroups string) []string {
	enabled := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(procCgroups))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && !strings.HasPrefix(f[0], "#") {
			enabled[f[0]] = f[3] == "1"
		}
	}
	return missing(RequiredControllers(true), enabled)
}

// MissingControllersV2 checks the root cgroup's cgroup.controllers on a unified (v2) host.
func MissingControllersV2(controllers string) []string {
	enabled := map[string]bool{}
	for _, c := range strings.Fields(controllers) {
		enabled[c] = true
	}
	return missing(RequiredControllers(false), enabled)
}

func missing(want []string, have map[string]bool) []string {
	var out []string
	for _, c := range want {
		if !have[c] {
			out = append(out, c)
		}
	}
	return out
}

// PortList names every port of p, for messages.
func (p Ports) PortList() map[string]int {
	return map[string]int{
		"kube-apiserver": p.APIServer, "etcd client": p.EtcdClient, "etcd peer": p.EtcdPeer,
		"kube-controller-manager": p.ControllerManager, "kube-scheduler": p.Scheduler,
		"kubelet": p.Kubelet, "kubelet healthz": p.KubeletHealthz,
		"kubox-controller metrics": p.ControllerMetrics, "kubox-controller health": p.ControllerHealth,
		"kubox-router": p.RouterHTTP, "kubox-router metrics": p.RouterMetrics, "kubox-router health": p.RouterHealth,
		"kube-network-policies metrics": p.NetworkPolicyMetrics,
		"kubox-egress proxy":            p.EgressProxy, "kubox-egress metrics": p.EgressMetrics, "kubox-egress health": p.EgressHealth,
	}
}

// PortConflicts returns one message per port that probe reports as taken, sorted by port.
func PortConflicts(p Ports, probe func(port int) error) []string {
	var out []string
	list := p.PortList()
	names := make([]string, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return list[a] - list[b] })
	for _, n := range names {
		if err := probe(list[n]); err != nil {
			out = append(out, fmt.Sprintf("port %d (%s) is in use: %v", list[n], n, err))
		}
	}
	return out
}

// SubnetConflicts returns the host addresses that overlap the pod subnet.
func SubnetConflicts(pods netip.Prefix, hostAddrs []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range hostAddrs {
		if a.Overlaps(pods) {
			out = append(out, a)
		}
	}
	return out
}

// maxSocketPath is the limit of a unix socket path (sun_path is 108 bytes with its NUL).
const maxSocketPath = 107

// CheckSocketPath fails when the containerd socket path is too long for a unix socket.
func CheckSocketPath(l Layout) error {
	if len(l.ContainerdSocket) > maxSocketPath {
		return fmt.Errorf("the containerd socket path %s is %d bytes, over the unix socket limit of %d: "+
			"choose a shorter --state-dir", l.ContainerdSocket, len(l.ContainerdSocket), maxSocketPath)
	}
	return nil
}

// CheckStatic fails when path is a dynamically linked ELF binary (it could not run inside an image
// that holds nothing else).
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New(path + " is dynamically linked")
		}
	}
	return nil
}

// Problems collects preflight failures so a person sees all of them at once.
type Problems []string

// Err joins the problems into one error, or returns nil when there are none.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return errors.New("preflight failed:\n  - " + strings.Join(p, "\n  - "))
}
