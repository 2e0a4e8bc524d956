package e2b

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	"github.com/kubox-dev/kubox/proto/e2b/envd/process/envdprocessconnect"
)

// envd through the router, as E2B's SDKs reach it: {49983}-{sandboxID}.{domain} with the
// envdAccessToken create answered in X-Access-Token (and the SDKs' Basic user header). Output
// streams as the process writes it; files go up and come back; another sandbox's token, no
// token, and the token of a killed sandbox are refused.
func TestEnvdThroughRouter(t *testing.T) {
	f := setup(t)
	a := f.create(t, map[string]any{"templateID": pool, "timeout": 600})
	b := f.create(t, map[string]any{"templateID": pool, "timeout": 600})

	out, exit := f.run(t, a.SandboxID, a.EnvdAccessToken, "sh", "-c", "echo out; echo err >&2; exit 3")
	if out != "out\nerr\n" && out != "err\nout\n" || exit != 3 {
		t.Errorf("the command wrote %q and exited %d; want out and err, exit code 3", out, exit)
	}
	f.checkStreams(t, a)

	f.checkFiles(t, a)

	for name, tok := range map[string]string{"another sandbox's token": b.EnvdAccessToken, "no token": ""} {
		if code := f.envdStatus(t, a.SandboxID, tok); code != http.StatusForbidden && code != http.StatusUnauthorized {
			t.Errorf("%s: envd of %s answered %d, not 401 or 403", name, a.SandboxID, code)
		} else if name == "another sandbox's token" && code != http.StatusForbidden {
			t.Errorf("%s: answered %d, not 403", name, code)
		}
	}
	if code := f.api(t, f.apiKey, http.MethodDelete, "/sandboxes/"+a.SandboxID, nil, nil); code != http.StatusNoContent {
		t.Fatalf("kill answered %d", code)
	}
	if code := f.envdStatus(t, a.SandboxID, a.EnvdAccessToken); code != http.StatusUnauthorized {
		t.Errorf("the token of a killed sandbox: envd answered %d, not 401", code)
	}
	if code := f.envdStatus(t, b.SandboxID, b.EnvdAccessToken); code != http.StatusOK {
		t.Errorf("envd of %s with its token answered %d, not 200", b.SandboxID, code)
	}
	if out, exit := f.run(t, b.SandboxID, b.EnvdAccessToken, "echo", "still here"); out != "still here\n" || exit != 0 {
		t.Errorf("the other sandbox answered %q, exit %d", out, exit)
	}
}

// process returns a Process client for sandbox id that sends tok as E2B's SDKs do.
func (f *fixture) process(id, tok string) envdprocessconnect.ProcessClient {
	return envdprocessconnect.NewProcessClient(f.hc, envdURL(id), connect.WithInterceptors(sdkHeaders(tok)))
}

// sdkHeaders adds the access token and the Basic user header E2B's SDKs send.
func sdkHeaders(tok string) connect.Interceptor {
	return headerInterceptor(func(h http.Header) {
		h.Set(contract.E2BAccessTokenHeader, tok)
		h.Set("Authorization", "Basic dXNlcjo=")
	})
}

type headerInterceptor func(http.Header)

func (hi headerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, r connect.AnyRequest) (connect.AnyResponse, error) {
		hi(r.Header())
		return next(ctx, r)
	}
}

func (hi headerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, s connect.Spec) connect.StreamingClientConn {
		c := next(ctx, s)
		hi(c.RequestHeader())
		return c
	}
}

func (hi headerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// run starts cmd through envd's Start and returns its output (stdout and stderr as they came)
// and exit code.
func (f *fixture) run(t *testing.T, id, tok, cmd string, args ...string) (string, int32) {
	t.Helper()
	stream, err := f.process(id, tok).Start(t.Context(), connect.NewRequest(&envdprocess.StartRequest{
		Process: &envdprocess.ProcessConfig{Cmd: cmd, Args: args}}))
	if err != nil {
		t.Fatalf("Start %s in %s: %v", cmd, id, err)
	}
	defer func() { _ = stream.Close() }()
	var out strings.Builder
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if d := ev.GetData(); d != nil {
			out.Write(d.GetStdout())
			out.Write(d.GetStderr())
		}
		if e := ev.GetEnd(); e != nil {
			return out.String(), e.GetExitCode()
		}
	}
	t.Fatalf("Start %s in %s ended without an end event: %v", cmd, id, stream.Err())
	return "", 0
}

// checkStreams receives a process's first output while the process still runs (it waits on its
// stdin): the router passes the stream on unbuffered.
func (f *fixture) checkStreams(t *testing.T, sb sandbox) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := f.process(sb.SandboxID, sb.EnvdAccessToken).Start(ctx, connect.NewRequest(&envdprocess.StartRequest{
		Process: &envdprocess.ProcessConfig{Cmd: "sh", Args: []string{"-c", "echo first; read line; echo never"}}}))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = stream.Close() }()
	var pid uint32
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if s := ev.GetStart(); s != nil {
			pid = s.GetPid()
		}
		if ev.GetEnd() != nil {
			t.Fatal("the process ended before it was sent input")
		}
		if d := ev.GetData(); d != nil && string(d.GetStdout()) == "first\n" {
			break
		}
	}
	if stream.Err() != nil {
		t.Fatalf("the stream failed before the first output: %v", stream.Err())
	}
	_, err = f.process(sb.SandboxID, sb.EnvdAccessToken).SendSignal(t.Context(), connect.NewRequest(&envdprocess.SendSignalRequest{
		Process: &envdprocess.ProcessSelector{Selector: &envdprocess.ProcessSelector_Pid{Pid: pid}}, Signal: envdprocess.Signal_SIGNAL_SIGKILL}))
	if err != nil {
		t.Errorf("SendSignal: %v", err)
	}
}

// checkFiles uploads a file through /files and downloads it again.
func (f *fixture) checkFiles(t *testing.T, sb sandbox) {
	t.Helper()
	content := bytes.Repeat([]byte("kubox e2b\n"), 10000)
	res := f.envd(t, http.MethodPost, sb.SandboxID, "/files?path=notes.txt", sb.EnvdAccessToken, content)
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("upload answered %d %s", res.StatusCode, b)
	}
	_ = res.Body.Close()
	res = f.envd(t, http.MethodGet, sb.SandboxID, "/files?path=notes.txt", sb.EnvdAccessToken, nil)
	defer func() { _ = res.Body.Close() }()
	got, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !bytes.Equal(got, content) {
		t.Errorf("download answered %d with %d bytes; want 200 and the %d bytes uploaded", res.StatusCode, len(got), len(content))
	}
}

// envd sends a plain HTTP request to sandbox id's envd with tok (none when empty).
func (f *fixture) envd(t *testing.T, method, id, path, tok string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, envdURL(id)+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set(contract.E2BAccessTokenHeader, tok)
	}
	ct := "application/octet-stream"
	if strings.HasPrefix(path, "/process.") {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	res, err := f.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res
}

// envdStatus is the status of envd's process List for sandbox id with tok.
func (f *fixture) envdStatus(t *testing.T, id, tok string) int {
	t.Helper()
	res := f.envd(t, http.MethodPost, id, "/process.Process/List", tok, []byte("{}"))
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	t.Logf("envd List of %s: %d %s", id, res.StatusCode, b)
	return res.StatusCode
}

// TestCreateToFirstOutput measures, and only logs, create → the first command's output through
// the router for ten sandboxes in a row (the warm pool holds two; the rest start cold). The
// figures are of this process-local setup (envtest, agents in the test process), not of a node.
func TestCreateToFirstOutput(t *testing.T) {
	f := setup(t)
	var took []time.Duration
	for range 10 {
		start := time.Now()
		sb := f.create(t, map[string]any{"templateID": pool, "timeout": 600})
		if out, _ := f.run(t, sb.SandboxID, sb.EnvdAccessToken, "echo", "ready"); out != "ready\n" {
			t.Fatalf("the first command wrote %q", out)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("create → first output, 10 sandboxes: p50 %s, max %s", took[len(took)/2], took[len(took)-1])
}
