package devenv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// FindRepo walks up from dir to the kubox checkout (the folder holding hack/tools/install.sh).
func FindRepo(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "tools", "install.sh")); err == nil {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no kubox checkout above %s (hack/tools/install.sh not found): "+
				"run kubox dev from the checkout or pass --repo", dir)
		}
	}
}

// nodeTools are the wrapper modules under hack/tools the node needs.
var nodeTools = []string{"etcd", "kubernetes", "containerd", "gvisor", "kube-network-policies"}

// EnsureTools builds the pinned binaries that are not cached yet (hack/tools/install.sh node),
// streaming its progress to out, and returns their paths. built is false when all were cached.
func EnsureTools(repo string, out io.Writer) (t Tools, built bool, err error) {
	dirs := map[string]string{}
	for _, name := range nodeTools {
		d, err := toolsScript(repo, "dir", name)
		if err != nil {
			return Tools{}, false, err
		}
		dirs[name] = d
		if _, err := os.Stat(filepath.Join(d, ".complete")); err != nil {
			built = true
		}
	}
	if built {
		cmd := exec.Command(filepath.Join(repo, "hack", "tools", "install.sh"), "node")
		cmd.Dir, cmd.Stdout, cmd.Stderr = repo, out, out
		if err := cmd.Run(); err != nil {
			return Tools{}, true, fmt.Errorf("build the node tools (hack/tools/install.sh node): %w; "+
				"its output above says which tool failed", err)
		}
	}
	return NewTools(ToolDirs{Etcd: dirs["etcd"], Kubernetes: dirs["kubernetes"],
		Containerd: dirs["containerd"], GVisor: dirs["gvisor"], NetworkPolicies: dirs["kube-network-policies"]}), built, nil
}

// StockShim is the tool holding gVisor's own shim (StockShimPath).
const StockShim = "gvisor-stock-shim"

// StockShimPath builds gVisor's own containerd-shim-runsc-v1 from the pinned module when it is not
// cached yet (hack/tools/install.sh gvisor-stock-shim), streaming its progress to out, and
// returns its path.
func StockShimPath(repo string, out io.Writer) (string, error) {
	d, err := toolsScript(repo, "dir", StockShim)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(d, ".complete")); err != nil {
		cmd := exec.Command(filepath.Join(repo, "hack", "tools", "install.sh"), StockShim)
		cmd.Dir, cmd.Stdout, cmd.Stderr = repo, out, out
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("build the stock gVisor shim (hack/tools/install.sh %s): %w; its output above says why", StockShim, err)
		}
	}
	return filepath.Join(d, "containerd-shim-runsc-v1"), nil
}

func toolsScript(repo string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(repo, "hack", "tools", "install.sh"), args...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools/install.sh %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// BuildBinaries builds bin/<name> from ./cmd/<name> of the checkout for each name, in one `go
// build`, and returns their paths by name. A failure is returned with the compiler's first lines.
func BuildBinaries(repo string, names ...string) (map[string]string, error) {
	args := []string{"build", "-o", filepath.Join(repo, "bin") + string(filepath.Separator)}
	bins := map[string]string{}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
		bins[n] = filepath.Join(repo, "bin", n)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, firstLines(string(out), 5))
	}
	return bins, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
