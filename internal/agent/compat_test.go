package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubox-dev/kubox/internal/agent/compat/pyruntime"
	"github.com/kubox-dev/kubox/internal/testutil"
)

// compatCall sends method path to the compatibility port at base, with the token when token is
// set, and returns the status and body.
func compatCall(t testing.TB, method, base, path, token, contentType string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func execute(t testing.TB, base, command string) (int, pyruntime.ExecuteResponse) {
	t.Helper()
	payload, _ := json.Marshal(map[string]string{"command": command})
	code, body := compatCall(t, http.MethodPost, base, "/execute", testToken, "application/json", bytes.NewReader(payload))
	var got pyruntime.ExecuteResponse
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("POST /execute %q = %d %.200s: not python-runtime's answer: %v", command, code, body, err)
	}
	return code, got
}

// TestCompatExecuteReturnsAllOutput: a command writing more than 5 MiB to stdout and to stderr
// gets all of it back, byte for byte, with its exit code (the agent once cut both at 1 MiB and
// still answered exit code 0).
func TestCompatExecuteReturnsAllOutput(t *testing.T) {
	_, _, compat := startAgent(t, nil)
	const n = 800000 // seq 1 800000 writes 5,488,895 bytes
	want := testutil.SeqOutput(n)
	if len(want) <= 5<<20 {
		t.Fatalf("the test's output has %d bytes, want more than 5 MiB", len(want))
	}
	code, got := execute(t, compat, "sh -c 'seq 1 800000; seq 1 800000 >&2; exit 7'")
	if code != http.StatusOK || got.ExitCode != 7 {
		t.Fatalf("POST /execute = %d, exit_code %d; want 200 and 7", code, got.ExitCode)
	}
	for stream, s := range map[string]string{"stdout": got.Stdout, "stderr": got.Stderr} {
		if s != want {
			t.Errorf("%s has %d bytes, want the %d bytes seq wrote, identical", stream, len(s), len(want))
		}
	}
}

// TestCompatExecuteOverTheLimitFailsLoudly: past the configured limit the command is killed (yes
// never ends by itself) and the answer is an error status whose message names the limit and the
// settings that change it, never output cut short with exit code 0.
func TestCompatExecuteOverTheLimitFailsLoudly(t *testing.T) {
	cases := map[string]func(*Config){
		"flag":                 func(c *Config) { c.CompatMaxOutputBytes = ptr.To[int64](1 << 20) },
		"environment variable": func(c *Config) { c.LookupEnv = env(EnvCompatMaxOutputBytes, "1Mi") },
		"flag over variable": func(c *Config) {
			c.CompatMaxOutputBytes = ptr.To[int64](1 << 20)
			c.LookupEnv = env(EnvCompatMaxOutputBytes, "0")
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, compat := startAgent(t, mutate)
			code, got := execute(t, compat, "yes")
			if code != http.StatusInsufficientStorage || got.ExitCode == 0 || got.Stdout != "" {
				t.Errorf("POST /execute of yes = %d, exit_code %d, %d bytes of stdout; want 507, exit_code 1 and no output",
					code, got.ExitCode, len(got.Stdout))
			}
			for _, part := range []string{"limit of 1048576 bytes (1 MiB) to stdout", "killed", "--" + FlagCompatMaxOutputBytes, EnvCompatMaxOutputBytes} {
				if !strings.Contains(got.Stderr, part) {
					t.Errorf("stderr %q does not say %q", got.Stderr, part)
				}
			}
		})
	}
	t.Run("0 is no limit", func(t *testing.T) {
		_, _, compat := startAgent(t, func(c *Config) { c.LookupEnv = env(EnvCompatMaxOutputBytes, "0") })
		if code, got := execute(t, compat, "seq 1 800000"); code != http.StatusOK || got.Stdout != testutil.SeqOutput(800000) {
			t.Errorf("POST /execute = %d with %d bytes of stdout; want 200 and all of it", code, len(got.Stdout))
		}
	})
	t.Run("a variable that is not a size", func(t *testing.T) {
		_, err := New(Config{CompatPort: 1, CompatBaseDir: t.TempDir(), SandboxdRoot: t.TempDir(), WorkDir: t.TempDir(),
			LookupEnv: env(EnvCompatMaxOutputBytes, "lots")})
		if err == nil || !strings.Contains(err.Error(), EnvCompatMaxOutputBytes) {
			t.Errorf("New with %s=lots: %v; want an error naming the variable", EnvCompatMaxOutputBytes, err)
		}
	})
}

// env is a LookupEnv with one variable set.
func env(name, value string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == name {
			return value, true
		}
		return "", false
	}
}

// TestCompatUploadLimitIsASetting: no limit by default (TestUploadStreams in pyruntime sends
// 300 MiB); a configured one answers 413 naming the limit and its settings.
func TestCompatUploadLimitIsASetting(t *testing.T) {
	upload := func(t *testing.T, compat string, size int) (int, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		part, _ := mw.CreateFormFile("file", "data.bin")
		_, _ = part.Write(bytes.Repeat([]byte("x"), size))
		_ = mw.Close()
		code, b := compatCall(t, http.MethodPost, compat, "/upload", testToken, mw.FormDataContentType(), &body)
		return code, string(b)
	}
	_, _, compat := startAgent(t, func(c *Config) { c.LookupEnv = env(EnvCompatMaxUploadBytes, "1Ki") })
	code, body := upload(t, compat, 4096)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "1024 bytes (1 KiB)") ||
		!strings.Contains(body, "--"+FlagCompatMaxUploadBytes) || !strings.Contains(body, EnvCompatMaxUploadBytes) {
		t.Errorf("an upload over 1Ki = %d %s; want 413 naming the limit and its settings", code, body)
	}
	if code, body := upload(t, compat, 512); code != http.StatusOK {
		t.Errorf("an upload under the limit = %d %s; want 200", code, body)
	}
}

// agentSandboxProbes are the probes of agent-sandbox's Python SDK template
// (clients/python/agentic-sandbox-client/python-sandbox-template.yaml): readiness and liveness
// GET / on 8888, which kubox-agent's compatibility port serves in place of python-runtime.
var agentSandboxProbes = map[string]*corev1.Probe{
	"readiness": {ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8888)}},
		PeriodSeconds: 1},
	"liveness": {ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8888)}},
		InitialDelaySeconds: 2, PeriodSeconds: 10},
}

// kubeletProbe runs an HTTP probe the way kubelet does: GET, no credentials, its user agent;
// success is a status from 200 to 399. port maps the probe's container port to where the agent
// listens in the test.
func kubeletProbe(t *testing.T, p *corev1.Probe, port map[int32]string) (bool, int) {
	t.Helper()
	g := p.HTTPGet
	u := url.URL{Scheme: "http", Host: port[g.Port.IntVal], Path: g.Path}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "kube-probe/1.35")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400, resp.StatusCode
}

// TestCompatProbesNeedNoToken: with compatibilityAuth Required (the default), the probes of
// agent-sandbox's templates succeed, the probe paths answer GET without a token and say nothing
// secret, and everything else, the probe paths' other methods included, still needs the token.
func TestCompatProbesNeedNoToken(t *testing.T) {
	_, _, compat := startAgent(t, nil) // CompatAuth: true
	hostPort := strings.TrimPrefix(compat, "http://")
	for name, p := range agentSandboxProbes {
		if ok, code := kubeletProbe(t, p, map[int32]string{8888: hostPort}); !ok {
			t.Errorf("the %s probe of agent-sandbox's template failed: GET %s answered %d", name, p.HTTPGet.Path, code)
		}
	}
	open := map[string]string{
		"/":          `{"status":"ok","message":"Sandbox Runtime is active."}`, // python-runtime's, word for word
		"/healthz":   `{"status":"ok"}`,
		"/v1/health": `"status":"ok"`,
	}
	for path, want := range open {
		code, body := compatCall(t, http.MethodGet, compat, path, "", "", nil)
		if code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s without a token = %d %s; want 200 with %s", path, code, body, want)
		}
		if strings.Contains(string(body), testToken) {
			t.Errorf("GET %s reveals the token", path)
		}
	}
	guarded := []struct{ method, path, body string }{
		{http.MethodPost, "/execute", `{"command": "id"}`},
		{http.MethodPost, "/", `{}`},
		{http.MethodDelete, "/healthz", ""},
		{http.MethodPut, "/v1/health", ""},
		{http.MethodGet, "/list/", ""},
		{http.MethodGet, "/exists/x", ""},
		{http.MethodGet, "/download/x", ""},
		{http.MethodGet, "/v1/metadata", ""},
		{http.MethodGet, "/v1/files/", ""},
		{http.MethodGet, "//", ""},
		{http.MethodGet, "/healthz/", ""},
		{http.MethodGet, "/v1/health/x", ""},
	}
	for _, g := range guarded {
		if code, body := compatCall(t, g.method, compat, g.path, "", "application/json", strings.NewReader(g.body)); code != http.StatusUnauthorized {
			t.Errorf("%s %s without a token = %d %s; want 401", g.method, g.path, code, body)
		}
	}
	// With the token the probe paths answer the same.
	if code, body := compatCall(t, http.MethodGet, compat, "/", testToken, "", nil); code != http.StatusOK || string(body) != open["/"] {
		t.Errorf("GET / with the token = %d %s", code, body)
	}
}
