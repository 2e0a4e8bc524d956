package devenv

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

const cgroupFS = "/sys/fs/cgroup"

// HostCgroupV1 reports whether the host uses cgroup v1 (or hybrid): no unified root.
func HostCgroupV1() bool {
	_, err := os.Stat(filepath.Join(cgroupFS, "cgroup.controllers"))
	return err != nil
}

// Mount is one line of /proc/self/mountinfo, reduced to what kubox needs.
type Mount struct {
	Point  string
	FSType string
	Super  string // super options (for cgroup v1: the controllers)
}

// ParseMountinfo parses /proc/self/mountinfo.
func ParseMountinfo(data string) []Mount {
	var out []Mount
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+4 {
			continue
		}
		out = append(out, Mount{Point: unescapeOctal(f[4]), FSType: f[sep+1], Super: f[sep+3]})
	}
	return out
}

// unescapeOctal decodes mountinfo's \040-style escapes.
func unescapeOctal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountsUnder returns the mount points at or below dir, deepest first (the order to unmount).
func MountsUnder(mounts []Mount, dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, m := range mounts {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m.Point)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// Hierarchies returns the mount points of the cgroup hierarchies: every v1 hierarchy and, on a
// hybrid host, the unified one (runc and the kubelet create their cgroups there too).
func Hierarchies(mounts []Mount) []string {
	var out []string
	for _, m := range mounts {
		if m.FSType == "cgroup" || m.FSType == "cgroup2" {
			out = append(out, m.Point)
		}
	}
	return out
}

func readMounts() ([]Mount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return ParseMountinfo(string(data)), nil
}

// cgroupDirs returns the kubelet's cgroup root in every hierarchy of this host.
func cgroupDirs(root string) ([]string, error) {
	if !HostCgroupV1() {
		return []string{filepath.Join(cgroupFS, root)}, nil
	}
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range Hierarchies(mounts) {
		out = append(out, filepath.Join(h, root))
	}
	return out, nil
}

// EnsureCgroups creates the kubelet's cgroup root in every hierarchy; cpuset needs its cpus and
// mems copied from the parent before anything can join it.
func EnsureCgroups(root string) error {
	dirs, err := cgroupDirs(root)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if err := copyParent(d, f); err != nil {
				return err
			}
		}
	}
	if !HostCgroupV1() {
		return enableV2Controllers(dirs[0])
	}
	return nil
}

func copyParent(dir, file string) error {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(dir), file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	cur, _ := os.ReadFile(filepath.Join(dir, file))
	if strings.TrimSpace(string(cur)) != "" || strings.TrimSpace(string(data)) == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, file), data, 0o644)
}

func enableV2Controllers(dir string) error {
	for _, d := range []string{cgroupFS, dir} {
		for _, c := range RequiredControllers(false) {
			_ = os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+"+c), 0o644)
		}
	}
	return nil
}

// RemoveCgroups removes the kubelet's cgroup root, deepest first. A cgroup that still holds a
// process stays and is reported.
func RemoveCgroups(root string) error {
	dirs, err := cgroupDirs(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range dirs {
		var all []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(all[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", all[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// EnsureBridge creates the CNI bridge with the node IP before the kubelet starts, so the kubelet
// can serve on it; the bridge plugin then reuses it.
func EnsureBridge(c Config) error {
	if _, err := net.InterfaceByName(c.Bridge); err != nil {
		if err := ip("link", "add", "name", c.Bridge, "type", "bridge"); err != nil {
			return err
		}
	}
	addr := netip.PrefixFrom(c.NodeIP(), c.PodSubnet.Bits()).String()
	if has, _ := interfaceHas(c.Bridge, c.NodeIP()); !has {
		if err := ip("addr", "add", addr, "dev", c.Bridge); err != nil {
			return err
		}
	}
	return ip("link", "set", c.Bridge, "up")
}

// RemoveBridge deletes the CNI bridge (the veths of deleted pods are gone with their netns).
func RemoveBridge(name string) error {
	if _, err := net.InterfaceByName(name); err != nil {
		return nil
	}
	return ip("link", "del", name)
}

func interfaceHas(name string, a netip.Addr) (bool, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return false, err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return false, err
	}
	for _, x := range addrs {
		if p, err := netip.ParsePrefix(x.String()); err == nil && p.Addr() == a {
			return true, nil
		}
	}
	return false, nil
}

// HostPrefixes lists the addresses of every interface except skip (kubox's own bridge).
func HostPrefixes(skip string) []netip.Prefix {
	ifcs, _ := net.Interfaces()
	var out []netip.Prefix
	for _, ifc := range ifcs {
		if ifc.Name == skip {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, x := range addrs {
			if p, err := netip.ParsePrefix(x.String()); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	return out
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
