// Package codeinterp_test drives kubox-agent's code interpreter (internal/agent/codeinterp) with
// real interpreters: the host's python3 (Debian's, with matplotlib: make python-deps), node and
// bash, and E2B's stock @e2b/code-interpreter client (make e2b-deps). They are why these tests are
// not in the pure-Go unit tier.
package codeinterp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/internal/testutil/agenttest"
)

// TestMain makes the agents' reaper wait for their own children only: the tests also run node
// with exec.Cmd (sdk_test.go), whose exit status a reaper of every child would take, failing
// its Wait with ECHILD.
func TestMain(m *testing.M) {
	if err := process.ReapOwnChildrenOnly(); err != nil {
		panic(err)
	}
	agenttest.VerifyTestMain(m)
}

const testToken = "0123456789abcdef0123456789abcdef-interp-test"

// guard bounds every wait in these tests; it only turns a hang into a failure.
const guard = 60 * time.Second

func guardCtx(t testing.TB) context.Context { return agenttest.Guard(t, guard) }

// sandbox is a real kubox-agent on 127.0.0.1 with its code-interpreter port on, its file root a
// temporary directory, and the host's python3 (Debian's, with matplotlib: make python-deps),
// node and bash first on PATH.
type sandbox struct {
	url  string
	root string
	http *http.Client
}

func startSandbox(t testing.TB) *sandbox {
	t.Helper()
	a := agenttest.Start(t, testToken, 2, func(c *agent.Config) {
		c.CodeInterpreterPort = agenttest.FreePort(t)
		c.Process = process.Options{Env: []string{"PATH=/usr/bin:/bin:/usr/local/bin", "HOME=" + c.Root, "LANG=C.UTF-8"}}
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &sandbox{url: a.URL(1), root: a.Root, http: &http.Client{Transport: tr}}
}

// do sends a request with the token as E2B's SDK sends it (X-Access-Token).
func (s *sandbox) do(ctx context.Context, t testing.TB, method, path string, body any) *http.Response {
	t.Helper()
	return s.doToken(ctx, t, method, path, body, testToken)
}

func (s *sandbox) doToken(ctx context.Context, t testing.TB, method, path string, body any, token string) *http.Response {
	t.Helper()
	req := agenttest.JSONRequest(ctx, t, method, s.url+path, body)
	if token != "" {
		req.Header.Set(contract.E2BAccessTokenHeader, token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// stream is an execution's answer read message by message.
type stream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (s *sandbox) start(ctx context.Context, t testing.TB, req codeinterp.ExecuteRequest) *stream {
	t.Helper()
	resp := s.do(ctx, t, http.MethodPost, "/execute", req)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Fatalf("POST /execute %q: %s: %s", req.Code, resp.Status, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return &stream{resp: resp, sc: sc}
}

// next is the next message; ok is false at the end of the body.
func (st *stream) next(t testing.TB) (codeinterp.Message, bool) {
	t.Helper()
	if !st.sc.Scan() {
		if err := st.sc.Err(); err != nil {
			t.Fatalf("reading the execution: %v", err)
		}
		return codeinterp.Message{}, false
	}
	var m codeinterp.Message
	if err := json.Unmarshal(st.sc.Bytes(), &m); err != nil {
		t.Fatalf("a line of the execution is not a message: %v: %q", err, st.sc.Text())
	}
	return m, true
}

// execution is an execution's messages as @e2b/code-interpreter's Execution collects them.
type execution struct {
	Stdout, Stderr string
	Results        []codeinterp.Message
	Error          *codeinterp.Message
	Count          int
	Ended          bool
}

// main is the text of the main result, as Execution.text.
func (e execution) main() string {
	for _, r := range e.Results {
		if r.IsMainResult != nil && *r.IsMainResult {
			return r.Text
		}
	}
	return ""
}

func (st *stream) collect(t testing.TB) execution {
	t.Helper()
	var e execution
	for {
		m, ok := st.next(t)
		if !ok {
			return e
		}
		switch m.Type {
		case "stdout":
			e.Stdout += m.Text
		case "stderr":
			e.Stderr += m.Text
		case "result":
			e.Results = append(e.Results, m)
		case "error":
			e.Error = &m
		case "number_of_executions":
			e.Count = *m.ExecutionCount
		case "end_of_execution":
			e.Ended = true
		}
	}
}

func (s *sandbox) run(t testing.TB, req codeinterp.ExecuteRequest) execution {
	t.Helper()
	e := s.start(guardCtx(t), t, req).collect(t)
	if !e.Ended {
		t.Fatalf("the execution of %q did not end with end_of_execution: %+v", req.Code, e)
	}
	return e
}

func (s *sandbox) createContext(t testing.TB, req codeinterp.CreateContextRequest) codeinterp.Context {
	t.Helper()
	resp := s.do(guardCtx(t), t, http.MethodPost, "/contexts", req)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /contexts %+v: %s: %s", req, resp.Status, b)
	}
	var c codeinterp.Context
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *sandbox) status(t testing.TB, method, path string, body any) (int, string) {
	t.Helper()
	resp := s.do(guardCtx(t), t, method, path, body)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// waitFile waits until path exists: how a test tells code running in the sandbox to go on.
func waitFileCode(path string) string {
	return "import os, time\nwhile not os.path.exists(" + pyQuote(path) + "):\n    time.sleep(0.01)\n"
}

func pyQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func touch(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func touchDir(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func (s *sandbox) getJSON(t testing.TB, path string, v any) {
	t.Helper()
	resp := s.do(guardCtx(t), t, http.MethodGet, path, nil)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
