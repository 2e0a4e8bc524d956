package harness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// BuildStatic builds ./cmd/<name> of the checkout (run from its root) as the release images do:
// static, stripped, trimmed paths. It returns the binary's path inside dir.
func BuildStatic(dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/"+name)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s (run from the checkout): %v\n%s", name, err, out)
	}
	return bin, nil
}

// Process is a benchmark's own child process, stopped by its PID.
type Process struct{ Cmd *exec.Cmd }

// StartProcess starts bin with args, its stderr on ours, and waits until healthURL answers 200.
func StartProcess(bin, healthURL string, args ...string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	return startProcess(cmd, healthURL)
}

// StartProcessLogging is StartProcess with the process's stderr on log, for a process whose log
// would drown the benchmark's output; the process is killed if the benchmark dies.
func StartProcessLogging(log io.Writer, bin, healthURL string, args ...string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = log
	cmd.SysProcAttr = procAttr()
	return startProcess(cmd, healthURL)
}

func startProcess(cmd *exec.Cmd, healthURL string) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd}
	if err := waitHealthy(healthURL, 60*time.Second); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s: %w", filepath.Base(cmd.Path), err)
	}
	return p, nil
}

// Stop interrupts the process and waits for it.
func (p *Process) Stop() {
	_ = p.Cmd.Process.Signal(os.Interrupt)
	_ = p.Cmd.Wait()
}

// RSSKiB is the process's resident memory.
func (p *Process) RSSKiB() (int64, error) { return p.StatusKiB("VmRSS") }

// StatusKiB is a memory field of /proc/<pid>/status in KiB: VmRSS, RssAnon (heap, stacks),
// RssFile (the binary's pages), VmHWM (the peak RSS).
func (p *Process) StatusKiB(field string) (int64, error) {
	pid := p.Cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func waitHealthy(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("did not answer " + url + " with 200 within " + timeout.String())
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Latencies sorts a sample of durations for Pct.
type Latencies []time.Duration

// Sorted returns the sample in increasing order.
func (l Latencies) Sorted() Latencies {
	s := append(Latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// Pct is the p-th percentile of a sorted sample (nearest rank).
func (l Latencies) Pct(p int) time.Duration {
	i := (len(l)*p + 99) / 100
	return l[max(0, min(len(l)-1, i-1))]
}

// Ms formats d in milliseconds with two decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// FileMiB is the size of the file at path in MiB, 0 when it cannot be read.
func FileMiB(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / (1 << 20)
}
