package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
	processv1 "github.com/kubox-dev/kubox/proto/process/v1"
	"github.com/kubox-dev/kubox/proto/process/v1/processv1connect"
)

const testToken = "0123456789abcdef0123456789abcdef-test-token"

// startAgent runs an agent with both servers on 127.0.0.1, ports chosen by the kernel, and stops
// it when the test ends. It returns the agent and the base URLs of its port and its compatibility
// port.
func startAgent(t testing.TB, mutate func(*Config)) (*Agent, string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{Token: auth.Fixed([]byte(testToken)), CompatAuth: true, CompatPort: 1, // non-zero: build the compatibility server
		CompatBaseDir: mkdir(t, dir, "app"), SandboxdRoot: mkdir(t, dir, "workspace"), WorkDir: dir,
		ShutdownGrace: 2 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.sync = func() {} // not the machine's file systems on every test's shutdown
	for _, s := range a.servers {
		s.Addr = "127.0.0.1:0"
	}
	if err := a.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	addrs := a.Addrs()
	return a, "http://" + addrs[0].String(), "http://" + addrs[1].String()
}

func mkdir(t testing.TB, parts ...string) string {
	t.Helper()
	d := filepath.Join(parts...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAgentRunsCommandsForTheTokenOnly(t *testing.T) {
	_, base, _ := startAgent(t, nil)
	run := func(token string) (*connect.Response[agentv1.RunProcessResponse], error) {
		c := agentv1connect.NewProcessServiceClient(contract.BearerClient(token), base)
		return c.RunProcess(t.Context(), connect.NewRequest(&agentv1.RunProcessRequest{
			Spec: &agentv1.ProcessSpec{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}}))
	}
	res, err := run(testToken)
	if err != nil {
		t.Fatalf("RunProcess: %v", err)
	}
	if got := string(res.Msg.GetStdout()); got != "out\n" {
		t.Errorf("stdout %q, want %q", got, "out\n")
	}
	if got := string(res.Msg.GetStderr()); got != "err\n" {
		t.Errorf("stderr %q, want %q", got, "err\n")
	}
	if got := res.Msg.GetExit().GetExitCode(); got != 3 {
		t.Errorf("exit code %d, want 3", got)
	}
	if _, err := run("wrong-token-wrong-token-wrong-token-xx"); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("wrong token: %v, want unauthenticated", err)
	}
}

func TestAgentServesFilesAndHealth(t *testing.T) {
	_, base, _ := startAgent(t, nil)
	target := filepath.Join(t.TempDir(), "dir", "hello.txt")
	do := func(method, url, token string, body io.Reader) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := do(http.MethodPut, base+"/files"+target, testToken, strings.NewReader("hello")); code/100 != 2 {
		t.Fatalf("PUT /files%s: status %d", target, code)
	}
	if code, body := do(http.MethodGet, base+"/files"+target, testToken, nil); code != 200 || body != "hello" {
		t.Errorf("GET /files%s = %d %q, want 200 hello", target, code, body)
	}
	if code, _ := do(http.MethodGet, base+"/files"+target, "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET without a token: %d, want 401", code)
	}
	if code, body := do(http.MethodGet, base+HealthPath, "", nil); code != 200 || !strings.Contains(body, "ok") {
		t.Errorf("GET %s without a token = %d %q, want 200", HealthPath, code, body)
	}
}

func TestAgentServesTheCompatibilityAPIs(t *testing.T) {
	for _, auth := range []bool{true, false} {
		t.Run(map[bool]string{true: "auth required", false: "auth disabled"}[auth], func(t *testing.T) {
			_, _, compat := startAgent(t, func(c *Config) { c.CompatAuth = auth })
			post := func(token string) (int, map[string]any) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, compat+"/execute",
					bytes.NewReader([]byte(`{"command": "sh -c 'echo $((6*7))'"}`)))
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = resp.Body.Close() }()
				var out map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&out)
				return resp.StatusCode, out
			}
			code, out := post(testToken)
			if code != 200 || out["stdout"] != "42\n" || out["exit_code"] != float64(0) {
				t.Errorf("POST /execute = %d %v, want 200 with stdout 42", code, out)
			}
			code, _ = post("")
			if want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusOK}[auth]; code != want {
				t.Errorf("POST /execute without a token = %d, want %d", code, want)
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, compat+"/v1/health", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("sandboxd's /v1/health = %d, want 200", resp.StatusCode)
			}
		})
	}
}

func TestAgentRunsTheMainCommandAndStopsItOnShutdown(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	a, _, _ := startAgent(t, func(c *Config) {
		c.Main = []string{"sh", "-c", "touch " + marker + "; exec sleep 1000"}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the main command never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-a.main.Done():
	case <-ctx.Done():
		t.Fatal("the main command outlived the agent's shutdown")
	}
	if sig := a.main.Exit().Signal.String(); sig != "terminated" {
		t.Errorf("main command ended by %q, want SIGTERM (terminated)", sig)
	}
}

// TestShutdownWithAnOpenStream: a client following a process does not hold the shutdown up until
// its deadline; the process gets SIGTERM (not SIGKILL) and the stream ends with it.
func TestShutdownWithAnOpenStream(t *testing.T) {
	a, base, _ := startAgent(t, nil)
	client := agentv1connect.NewProcessServiceClient(contract.BearerClient(testToken), base)
	stream, err := client.StartProcess(t.Context(), connect.NewRequest(&agentv1.StartProcessRequest{
		Spec: &agentv1.ProcessSpec{Argv: []string{"sleep", "1000"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() || stream.Msg().GetEvent().GetStarted() == nil {
		t.Fatalf("no started event: %v", stream.Err())
	}
	events := make(chan *agentv1.ProcessEvent, 16)
	go func() {
		defer close(events)
		for stream.Receive() {
			events <- stream.Msg().GetEvent()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a stream open: %v (the stream held the servers until the deadline)", err)
	}
	var exit *agentv1.ProcessExit
	for ev := range events {
		if e := ev.GetExited(); e != nil {
			exit = e
		}
	}
	if exit == nil || exit.GetSignal() != "SIGTERM" {
		t.Errorf("the followed process ended with %v, want SIGTERM within the grace period", exit)
	}
}

// TestAgentAppliesSettingsForProcessesStartedAfter checks SettingsService end to end: it needs the
// token, the file is written with the default mode, and a process started afterwards, through
// ProcessService, python-runtime's /execute and sandboxd's Execute, sees the variable.
func TestAgentAppliesSettingsForProcessesStartedAfter(t *testing.T) {
	a, base, compat := startAgent(t, func(c *Config) {
		c.Process.Env = []string{"PATH=" + os.Getenv("PATH"), "TOKEN=image"}
		c.SandboxdGRPCPort = 1 // non-zero: build sandboxd's gRPC server
	})
	file := filepath.Join(a.cfg.WorkDir, "secrets", "api", "key")
	req := connect.NewRequest(&agentv1.ApplySettingsRequest{ClaimUid: "claim-1",
		Env:   []*agentv1.EnvVar{{Name: "TOKEN", Value: "claim"}},
		Files: []*agentv1.SettingsFile{{Path: file, Content: []byte("s3cr3t")}}})
	if _, err := agentv1connect.NewSettingsServiceClient(http.DefaultClient, base).ApplySettings(t.Context(), req); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("ApplySettings without the token: %v, want Unauthenticated", err)
	}
	if _, err := agentv1connect.NewSettingsServiceClient(contract.BearerClient(testToken), base).ApplySettings(t.Context(), req); err != nil {
		t.Fatalf("ApplySettings: %v", err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("settings file: %v, %v; want mode 0400", fi, err)
	}
	res, err := agentv1connect.NewProcessServiceClient(contract.BearerClient(testToken), base).RunProcess(t.Context(),
		connect.NewRequest(&agentv1.RunProcessRequest{Spec: &agentv1.ProcessSpec{Argv: []string{"sh", "-c", `printf %s "$TOKEN"; cat ` + file}}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Msg.GetStdout()); got != "claims3cr3t" {
		t.Errorf("ProcessService's process printed %q, want the claim's variable and file %q", got, "claims3cr3t")
	}
	body, _ := json.Marshal(map[string]string{"command": `printenv TOKEN`})
	hreq, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, compat+"/execute", bytes.NewReader(body))
	hreq.Header.Set("Content-Type", "application/json")
	hres, err := contract.BearerClient(testToken).Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hres.Body.Close() }()
	var out struct{ Stdout string }
	if err := json.NewDecoder(hres.Body).Decode(&out); err != nil || out.Stdout != "claim\n" {
		t.Errorf("/execute: stdout %q (%v), want %q", out.Stdout, err, "claim\n")
	}
	sandboxd := processv1connect.NewProcessServiceClient(contract.BearerClient(testToken), "http://"+a.Addrs()[2].String())
	sres, err := sandboxd.Execute(t.Context(), connect.NewRequest(&processv1.ExecuteRequest{
		Config: &processv1.ProcessConfig{Command: []string{"printenv", "TOKEN"}}}))
	if err != nil || string(sres.Msg.GetStdout()) != "claim\n" {
		t.Errorf("sandboxd's Execute: %v, %v; want stdout %q", sres, err, "claim\n")
	}
}
