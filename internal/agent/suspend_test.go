package agent

import (
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

const suspending = "sandbox sb-test is suspending; retry after it resumes"

// TestShutdownLetsAWriteInFlightFinishThenSyncs: from Shutdown on, new writes are refused on every
// file API, the upload already streaming completes, and the file systems are synced after it.
func TestShutdownLetsAWriteInFlightFinishThenSyncs(t *testing.T) {
	dir := t.TempDir()
	a, base, _ := startAgent(t, func(c *Config) { c.SandboxName = "sb-test"; c.Root = mkdir(t, dir, "root") })
	var synced atomic.Int32
	var contentAtSync atomic.Value
	a.sync = func() {
		synced.Add(1)
		b, _ := os.ReadFile(filepath.Join(dir, "root", "big.txt"))
		contentAtSync.Store(string(b))
	}
	// The agent's handlers, also served where its listeners' shutdown does not reach, to send
	// requests after the shutdown began.
	mainSrv := httptest.NewServer(a.servers[0].Handler)
	defer mainSrv.Close()
	compatSrv := httptest.NewServer(a.servers[1].Handler)
	defer compatSrv.Close()

	body, feed := io.Pipe()
	req, _ := http.NewRequest(http.MethodPut, base+"/files/big.txt", body)
	req.Header.Set("Authorization", "Bearer "+testToken)
	put := make(chan *http.Response, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("the PUT in flight: %v", err)
		}
		put <- res
	}()
	if _, err := feed.Write([]byte("first half, ")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); a.writes.InFlight() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the PUT never reached the file API")
		}
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- a.Shutdown(ctx)
	}()
	waitRefused(t, mainSrv.URL+"/files/other.txt")
	checkRefusals(t, mainSrv.URL, compatSrv.URL)
	if synced.Load() != 0 {
		t.Fatal("the file systems were synced while a write was still in flight")
	}
	if _, err := feed.Write([]byte("second half")); err != nil {
		t.Fatal(err)
	}
	_ = feed.Close()
	res := <-put
	if res == nil {
		t.FailNow()
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Errorf("the PUT in flight: %d, want 201", res.StatusCode)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if synced.Load() != 1 || contentAtSync.Load() != "first half, second half" {
		t.Errorf("synced %d times, seeing %q; want once, after the whole write", synced.Load(), contentAtSync.Load())
	}
}

// waitRefused PUTs to url until the agent refuses it for suspending (Shutdown runs concurrently).
func waitRefused(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, msg := send(t, http.MethodPut, url, "", strings.NewReader("x"))
		if status == http.StatusServiceUnavailable {
			if !strings.Contains(msg, suspending) {
				t.Errorf("refusal %q, want it to say %q", msg, suspending)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still answered %d after Shutdown began", status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkRefusals sends a write to every other file API and wants each refused.
func checkRefusals(t *testing.T, mainURL, compatURL string) {
	t.Helper()
	for _, c := range []struct{ name, method, url string }{
		{"DELETE /files/", http.MethodDelete, mainURL + "/files/big.txt"},
		{"sandboxd PUT", http.MethodPut, compatURL + "/v1/files/a.txt"},
		{"sandboxd DELETE", http.MethodDelete, compatURL + "/v1/files/a.txt"},
	} {
		if status, msg := send(t, c.method, c.url, "", strings.NewReader("x")); status != http.StatusServiceUnavailable || !strings.Contains(msg, suspending) {
			t.Errorf("%s while suspending: %d %q, want 503 naming the suspend", c.name, status, msg)
		}
	}
	var form strings.Builder
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "up.txt")
	_, _ = fw.Write([]byte("x"))
	_ = mw.Close()
	if status, msg := send(t, http.MethodPost, compatURL+"/upload", mw.FormDataContentType(), strings.NewReader(form.String())); status != http.StatusServiceUnavailable || !strings.Contains(msg, suspending) {
		t.Errorf("python-runtime /upload while suspending: %d %q, want 503 naming the suspend", status, msg)
	}
	fs := agentv1connect.NewFilesystemServiceClient(contract.BearerClient(testToken), mainURL)
	_, err := fs.MakeDir(t.Context(), connect.NewRequest(&agentv1.MakeDirRequest{Path: "d"}))
	if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), suspending) {
		t.Errorf("MakeDir while suspending: %v, want unavailable naming the suspend", err)
	}
	if _, err := fs.Stat(t.Context(), connect.NewRequest(&agentv1.StatRequest{Path: "big.txt"})); connect.CodeOf(err) == connect.CodeUnavailable {
		t.Errorf("Stat, which reads, was refused: %v", err)
	}
}

// send makes an authenticated request and returns its status and body.
func send(t *testing.T, method, url, contentType string, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestGetActivityListsABackgroundProcess: a process left running by a command run through the
// agent keeps the sandbox awake, and the agent's own requests are reported, GetActivity excluded.
func TestGetActivityListsABackgroundProcess(t *testing.T) {
	a, base, _ := startAgent(t, nil)
	procs := agentv1connect.NewProcessServiceClient(contract.BearerClient(testToken), base)
	res, err := procs.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!"}}}))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Msg.GetStdout())))
	if err != nil {
		t.Fatalf("pid %q: %v", res.Msg.GetStdout(), err)
	}
	defer func() { _ = syscallKill(pid) }()
	client := agentv1connect.NewActivityServiceClient(contract.BearerClient(testToken), base)
	act, err := client.GetActivity(t.Context(), connect.NewRequest(&agentv1.GetActivityRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	// Outside a container /proc shows the whole machine, and GetActivity lists only 16: look for
	// the sleep in the full scan GetActivity counts.
	running, err := a.processes().Running()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, p := range running {
		found = found || p.PID == pid && strings.HasPrefix(p.Command, "sleep 1000")
	}
	if !found || act.Msg.GetRunningProcessCount() < 1 {
		out, _ := json.Marshal(act.Msg.GetRunningProcesses())
		t.Errorf("the background sleep (pid %d) is not among the running processes (%d: %s)", pid, act.Msg.GetRunningProcessCount(), out)
	}
	if act.Msg.GetLastRequestTime() == nil || act.Msg.GetOpenRequests() != 0 {
		t.Errorf("requests: last %v, %d open; want RunProcess's end and none open (GetActivity is not one)",
			act.Msg.GetLastRequestTime(), act.Msg.GetOpenRequests())
	}
	last := act.Msg.GetLastRequestTime().AsTime()
	act, err = client.GetActivity(t.Context(), connect.NewRequest(&agentv1.GetActivityRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if !act.Msg.GetLastRequestTime().AsTime().Equal(last) {
		t.Errorf("GetActivity moved the last request time from %s to %s", last, act.Msg.GetLastRequestTime().AsTime())
	}
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
