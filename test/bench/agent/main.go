// Command agent measures kubox-agent as a sandbox's clients see it: the real binary (built from
// the checkout, static, as in the agent image) on 127.0.0.1, with authentication and limits on.
// It reports the exec round trip of `true` (p50/p90/p99), the throughput of a process streaming
// its stdout, file upload and download throughput through /files/, and the agent's memory (RSS)
// idle and after the run. `make bench-agent` runs it; docs/benchmarks.md has the figures.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/internal/agent/auth"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

type options struct {
	execs       int
	streamBytes int64
	fileBytes   int64
}

func main() {
	var o options
	flag.IntVar(&o.execs, "execs", 1000, "sequential RunProcess calls of `true`")
	flag.Int64Var(&o.streamBytes, "stream-bytes", 1<<30, "bytes a process writes to stdout for the streaming figure")
	flag.Int64Var(&o.fileBytes, "file-bytes", 1<<30, "size of the file uploaded and downloaded")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "agent benchmark: %v\n", err)
		os.Exit(1)
	}
}

type agentProc struct {
	cmd   *exec.Cmd
	base  string
	token string
	dir   string
}

func run(o options) error {
	a, err := startAgent()
	if err != nil {
		return err
	}
	defer a.stop()
	time.Sleep(2 * time.Second) // let it settle before measuring idle memory
	idle, err := rssKiB(a.cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("# kubox-agent benchmark: %d CPUs, %s\n\n", runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| agent binary (static, stripped) | %.1f MiB |\n", fileMiB(a.binary()))
	fmt.Printf("| RSS idle | %.1f MiB |\n", float64(idle)/1024)
	ctx := context.Background()
	client := agentv1connect.NewProcessServiceClient(auth.Client(a.token), a.base)
	lat, err := execLatencies(ctx, client, o.execs)
	if err != nil {
		return err
	}
	fmt.Printf("| exec round trip of `true` (%d sequential RunProcess) p50 / p90 / p99 | %s / %s / %s ms |\n",
		o.execs, msf(pct(lat, 50)), msf(pct(lat, 90)), msf(pct(lat, 99)))
	if err := streamThroughput(ctx, client, o.streamBytes); err != nil {
		return err
	}
	if err := fileThroughput(ctx, a, o.fileBytes); err != nil {
		return err
	}
	after, err := rssKiB(a.cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("| RSS after the run | %.1f MiB |\n", float64(after)/1024)
	return nil
}

func startAgent() (*agentProc, error) {
	dir, err := os.MkdirTemp("", "kubox-agent-bench-")
	if err != nil {
		return nil, err
	}
	a := &agentProc{dir: dir}
	bin := a.binary()
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/kubox-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building kubox-agent (run from the checkout): %v\n%s", err, out)
	}
	raw := make([]byte, 48)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	a.token = base64.RawURLEncoding.EncodeToString(raw)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(a.token), 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	a.base = "http://127.0.0.1:" + strconv.Itoa(port)
	a.cmd = exec.Command(bin, "--host=127.0.0.1", "--port="+strconv.Itoa(port), "--compat-port=0", "--token-file="+tokenFile)
	a.cmd.Stderr = os.Stderr
	if err := a.cmd.Start(); err != nil {
		return nil, err
	}
	return a, a.waitHealthy()
}

func (a *agentProc) binary() string { return filepath.Join(a.dir, "kubox-agent") }

func (a *agentProc) waitHealthy() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(a.base + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("kubox-agent did not answer /healthz within 30s")
}

func (a *agentProc) stop() {
	_ = a.cmd.Process.Signal(os.Interrupt)
	_ = a.cmd.Wait()
	_ = os.RemoveAll(a.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func execLatencies(ctx context.Context, c agentv1connect.ProcessServiceClient, n int) ([]time.Duration, error) {
	req := &agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"true"}}}
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		res, err := c.RunProcess(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, fmt.Errorf("RunProcess true: %w", err)
		}
		if code := res.Msg.GetExit().GetExitCode(); code != 0 {
			return nil, fmt.Errorf("true exited with %d", code)
		}
		out = append(out, time.Since(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// streamThroughput starts a process writing n bytes to stdout and reads its output stream.
func streamThroughput(ctx context.Context, c agentv1connect.ProcessServiceClient, n int64) error {
	req := &agentv1.StartProcessRequest{FlowControl: true, // every byte delivered: the process waits for the client
		Spec: &agentv1.ProcessSpec{Argv: []string{"head", "-c", strconv.FormatInt(n, 10), "/dev/zero"}}}
	start := time.Now()
	stream, err := c.StartProcess(ctx, connect.NewRequest(req))
	if err != nil {
		return err
	}
	var got, dropped int64
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		got += int64(len(ev.GetOutput().GetData()))
		if d := ev.GetDropped(); d != nil {
			dropped++
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if got != n || dropped != 0 {
		return fmt.Errorf("streamed %d of %d bytes with %d drop events under flow control", got, n, dropped)
	}
	fmt.Printf("| process stdout streamed to the client (%s, flow control on, every byte received) | %.0f MiB/s |\n",
		size(n), float64(got)/(1<<20)/elapsed.Seconds())
	return nil
}

func fileThroughput(ctx context.Context, a *agentProc, n int64) error {
	target := filepath.Join(a.dir, "payload")
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, a.base+"/files"+target, io.LimitReader(zeros{}, n))
	if err != nil {
		return err
	}
	req.ContentLength = n
	if err := a.do(req, io.Discard); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	up := time.Since(start)
	start = time.Now()
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/files"+target, nil)
	if err != nil {
		return err
	}
	counter := &countWriter{}
	if err := a.do(req, counter); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	down := time.Since(start)
	if counter.n != n {
		return fmt.Errorf("downloaded %d bytes, uploaded %d", counter.n, n)
	}
	fmt.Printf("| file upload, PUT /files (%s, atomic: temp file + fsync + rename) | %.0f MiB/s |\n", size(n), float64(n)/(1<<20)/up.Seconds())
	fmt.Printf("| file download, GET /files (%s) | %.0f MiB/s |\n", size(n), float64(n)/(1<<20)/down.Seconds())
	return os.Remove(target)
}

func (a *agentProc) do(req *http.Request, w io.Writer) error {
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func fileMiB(path string) float64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / (1 << 20)
}

func size(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

func msf(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }
