package codeinterp_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
	"github.com/kubox-dev/kubox/internal/testutil/agenttest"
)

// TestTokenRequired: every path but /health needs the sandbox's agent token; a client without it
// (another tenant's Pod, a scanner) cannot run code or see the contexts.
func TestTokenRequired(t *testing.T) {
	s := startSandbox(t)
	for name, tc := range map[string]struct {
		method, path, token string
		body                any
		want                int
	}{
		"execute without a token":    {http.MethodPost, "/execute", "", codeinterp.ExecuteRequest{Code: "open('/tmp/pwned', 'w')"}, http.StatusUnauthorized},
		"execute with another token": {http.MethodPost, "/execute", "0123456789abcdef0123456789abcdef-other", codeinterp.ExecuteRequest{Code: "1"}, http.StatusUnauthorized},
		"create a context":           {http.MethodPost, "/contexts", "", codeinterp.CreateContextRequest{}, http.StatusUnauthorized},
		"list the contexts":          {http.MethodGet, "/contexts", "", nil, http.StatusUnauthorized},
		"restart a context":          {http.MethodPost, "/contexts/x/restart", "", nil, http.StatusUnauthorized},
		"remove a context":           {http.MethodDelete, "/contexts/x", "", nil, http.StatusUnauthorized},
		"health without a token":     {http.MethodGet, "/health", "", nil, http.StatusOK},
		"execute with the token":     {http.MethodPost, "/execute", testToken, codeinterp.ExecuteRequest{Code: "1"}, http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			resp := s.doToken(guardCtx(t), t, tc.method, tc.path, tc.body, tc.token)
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s = %s %s, want %d", tc.method, tc.path, resp.Status, b, tc.want)
			}
			if tc.want == http.StatusUnauthorized && !strings.Contains(string(b), "agent token") {
				t.Errorf("the 401 does not say what to send: %s", b)
			}
		})
	}
	var list []codeinterp.Context
	s.getJSON(t, "/contexts", &list)
	if len(list) != 1 {
		t.Errorf("contexts after the refused requests = %+v, want only the one the token's execution made", list)
	}
}

// TestCodeCannotSpeakTheProtocol: user code reads no request from the agent (its stdin is
// empty), and output that imitates the drivers' frames without the interpreter's nonce is the
// user's text, not a result or the end of the execution.
func TestCodeCannotSpeakTheProtocol(t *testing.T) {
	s := startSandbox(t)
	forged := `\x1e{"type": "end"}\n\x1e{"type": "result", "is_main_result": true, "text": "forged"}\n`
	cases := map[string]struct {
		language, code string
		wantStdout     string
	}{
		"python input reads nothing": {"python", "import sys\nprint(repr(sys.stdin.read()))", "''\n"},
		"python forged frames":       {"python", "print('" + forged + "', end='')", "\x1e{\"type\": \"end\"}\n\x1e{\"type\": \"result\", \"is_main_result\": true, \"text\": \"forged\"}\n"},
		"javascript stdin is closed": {"javascript", "console.log(require('fs').readFileSync(0, 'utf8').length)", "0\n"},
		"bash cat reads nothing":     {"bash", "cat; echo done", "done\n"},
		"bash forged frames":         {"bash", "printf '\\036{\"type\":\"end\"}\\n'", "\x1e{\"type\":\"end\"}\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := s.createContext(t, codeinterp.CreateContextRequest{Language: tc.language})
			e := s.run(t, codeinterp.ExecuteRequest{Code: tc.code, ContextID: c.ID})
			if e.Error != nil {
				t.Fatalf("%s: %s\n%s", *e.Error.Name, *e.Error.Value, *e.Error.Traceback)
			}
			if e.Stdout != tc.wantStdout || len(e.Results) != 0 {
				t.Errorf("stdout %q and results %+v, want stdout %q and no result", e.Stdout, e.Results, tc.wantStdout)
			}
			// The context still answers: the driver kept the protocol.
			if e := s.run(t, codeinterp.ExecuteRequest{Code: map[string]string{"python": "print(7)", "javascript": "console.log(7)", "bash": "echo 7"}[tc.language], ContextID: c.ID}); e.Stdout != "7\n" {
				t.Errorf("the next execution's stdout = %q, want 7", e.Stdout)
			}
		})
	}
}

// TestTakenPortIsLeftToItsOwner: an image that serves E2B's own code interpreter on the port keeps
// it; the agent warns and serves its other ports.
func TestTakenPortIsLeftToItsOwner(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	var logged bytes.Buffer
	a, err := agent.New(agent.Config{Host: "127.0.0.1", Port: agenttest.FreePort(t), CodeInterpreterPort: l.Addr().(*net.TCPAddr).Port,
		Token: auth.Fixed([]byte(testToken)), Root: t.TempDir(), Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		t.Fatalf("Listen with the port taken: %v", err)
	}
	defer func() { _ = a.Shutdown(guardCtx(t)) }()
	if len(a.Addrs()) != 1 || !strings.Contains(logged.String(), l.Addr().String()) {
		t.Errorf("the agent listens on %v and logged %q; want its own port only and a warning naming %s", a.Addrs(), logged.String(), l.Addr())
	}
}
