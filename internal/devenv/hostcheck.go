package devenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Preflight checks what `up` needs from the host and reports every problem at once.
func Preflight(c Config, l Layout) error {
	var p Problems
	if os.Geteuid() != 0 {
		p = append(p, "kubox dev up must run as root (it starts a kubelet and containerd, mounts and creates cgroups): run it with sudo")
	}
	if err := CheckSocketPath(l); err != nil {
		p = append(p, err.Error())
	}
	p = append(p, cgroupProblems()...)
	p = append(p, PortConflicts(c.Ports, probePort)...)
	for _, a := range SubnetConflicts(c.PodSubnet, HostPrefixes(c.Bridge)) {
		p = append(p, fmt.Sprintf("the pod subnet %s overlaps %s on this host: another network uses it", c.PodSubnet, a))
	}
	return p.Err()
}

func cgroupProblems() []string {
	var miss []string
	if HostCgroupV1() {
		data, err := os.ReadFile("/proc/cgroups")
		if err != nil {
			return []string{"cannot read /proc/cgroups: " + err.Error()}
		}
		miss = MissingControllersV1(string(data))
	} else {
		data, _ := os.ReadFile(filepath.Join(cgroupFS, "cgroup.controllers"))
		miss = MissingControllersV2(string(data))
	}
	if len(miss) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("cgroup controllers missing or disabled: %s (the kubelet needs them; enable them in the kernel command line)", strings.Join(miss, ", "))}
}

func probePort(port int) error {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return err
	}
	return ln.Close()
}

// EnsurePackages installs the missing Debian packages; it runs `apt-get update` once when the
// first install fails.
func EnsurePackages(p *Progress) error {
	miss := MissingPackages(fileExists)
	if len(miss) == 0 {
		return nil
	}
	line := AptInstallLine(miss)
	p.Say("installing Debian packages: %s", line)
	if aptInstall(miss) == nil {
		return nil
	}
	p.Say("apt-get install failed; running apt-get update and trying again")
	_ = exec.Command("apt-get", "update").Run()
	if out, err := aptInstallOutput(miss); err != nil {
		return fmt.Errorf("could not install %s: %v\n%s\nrun by hand: %s", strings.Join(names(miss), ", "), err, firstLines(out, 10), line)
	}
	return nil
}

func aptInstall(pkgs []DebPackage) error {
	_, err := aptInstallOutput(pkgs)
	return err
}

func aptInstallOutput(pkgs []DebPackage) (string, error) {
	args := append([]string{"install", "-y", "--no-install-recommends"}, names(pkgs)...)
	cmd := exec.Command("apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func names(pkgs []DebPackage) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Name
	}
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
