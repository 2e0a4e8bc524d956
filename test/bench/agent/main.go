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
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	"github.com/kubox-dev/kubox/test/bench/harness"
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
	*harness.Process
	bin   string
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
	idle, err := a.RSSKiB()
	if err != nil {
		return err
	}
	fmt.Printf("# kubox-agent benchmark: %d CPUs, %s\n\n", runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("| measure | value |\n|---|---|\n")
	fmt.Printf("| agent binary (static, stripped) | %.1f MiB |\n", harness.FileMiB(a.bin))
	fmt.Printf("| RSS idle | %.1f MiB |\n", float64(idle)/1024)
	ctx := context.Background()
	client := agentv1connect.NewProcessServiceClient(contract.BearerClient(a.token), a.base)
	lat, err := execLatencies(ctx, client, o.execs)
	if err != nil {
		return err
	}
	fmt.Printf("| exec round trip of `true` (%d sequential RunProcess) p50 / p90 / p99 | %s / %s / %s ms |\n",
		o.execs, harness.Ms(lat.Pct(50)), harness.Ms(lat.Pct(90)), harness.Ms(lat.Pct(99)))
	if err := streamThroughput(ctx, client, o.streamBytes); err != nil {
		return err
	}
	if err := fileThroughput(ctx, a, o.fileBytes); err != nil {
		return err
	}
	after, err := a.RSSKiB()
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
	if a.bin, err = harness.BuildStatic(dir, "kubox-agent"); err != nil {
		return nil, err
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
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	a.base = "http://127.0.0.1:" + strconv.Itoa(port)
	a.Process, err = harness.StartProcess(a.bin, a.base+"/healthz",
		"--host=127.0.0.1", "--port="+strconv.Itoa(port), "--compat-port=0", "--token-file="+tokenFile)
	return a, err
}

func (a *agentProc) stop() {
	a.Stop()
	_ = os.RemoveAll(a.dir)
}

func execLatencies(ctx context.Context, c agentv1connect.ProcessServiceClient, n int) (harness.Latencies, error) {
	out := make(harness.Latencies, 0, n)
	for range n {
		d, err := harness.RunTrue(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out.Sorted(), nil
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

func size(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
