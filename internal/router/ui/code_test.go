package ui

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeInterpreter plays a sandbox's code interpreter: it records each request and answers
// with status and body.
type fakeInterpreter struct {
	mu   sync.Mutex
	got  []string
	code int
	body string
}

func (f *fakeInterpreter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.got = append(f.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(b))
	f.mu.Unlock()
	w.WriteHeader(f.code)
	_, _ = io.WriteString(w, f.body)
}

// newCodeHandler is a dashboard whose sandboxes' code interpreters are f: alice may connect to
// every sandbox, the ServiceAccount to none (403, as RBAC on sandboxes/connect answers).
func newCodeHandler(t *testing.T, f *fakeInterpreter) *Handler {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	h := newTestHandler(t, "")
	h.codePort, _ = strconv.Atoi(port)
	h.opts.Agent = func(_ context.Context, _ *http.Request, tok, ns, name string) (Agent, *Error) {
		if tok != "alice-token" {
			return Agent{}, errorf(http.StatusForbidden, "may not create sandboxes/connect of %s/%s", ns, name)
		}
		// The agent's own port: the code interpreter is beside it, on codePort.
		return Agent{URL: "http://127.0.0.1:1", Token: "agent-token"}, nil
	}
	return h
}

func TestCode(t *testing.T) {
	const run = "/ui/api/namespaces/team-a/sandboxes/sb/code"
	stream := `{"type":"number_of_executions","execution_count":1}` + "\n" + `{"type":"result","text":"42","is_main_result":true}` + "\n" +
		`{"type":"end_of_execution"}` + "\n"
	for name, tc := range map[string]struct {
		path, token, body string
		code              int
		answer            string
		wantCode          int
		wantBody          string
		// wantSent is what reached the interpreter: none when the dashboard refuses first.
		wantSent []string
	}{
		"a run streams the interpreter's NDJSON, sent with the agent token": {
			path: run, token: "alice-token", body: `{"code": "x + 1", "context_id": "ctx-1"}`, code: 200, answer: stream,
			wantCode: 200, wantBody: stream,
			wantSent: []string{`POST /execute Bearer agent-token {"code":"x + 1","context_id":"ctx-1"}`},
		},
		"a line that is not JSON ends the stream with an error, and nothing after it passes": {
			path: run, token: "alice-token", body: `{"code": "1", "language": "python"}`, code: 200,
			answer:   `{"type":"stdout","text":"a"}` + "\n<script>alert(1)</script>\n" + `{"type":"stdout","text":"b"}` + "\n",
			wantCode: 200, wantBody: `{"type":"stdout","text":"a"}` + "\n" +
				`{"name":"StreamError","traceback":"","type":"error","value":"the code interpreter sent a line that is not JSON; the rest of the run's output is not shown"}` + "\n",
			wantSent: []string{`POST /execute Bearer agent-token {"code":"1","language":"python"}`},
		},
		"a viewer who may not connect: 403, nothing reaches the sandbox": {
			path: run, token: "sa-token", body: `{"code": "import os; os.system('id')"}`, wantCode: 403,
		},
		"code over the limit: 413, nothing reaches the sandbox": {
			path: run, token: "alice-token", body: `{"code": "` + strings.Repeat("x", maxCodeBytes) + `"}`, wantCode: 413,
		},
		"a context and a language: 400": {
			path: run, token: "alice-token", body: `{"code": "1", "context_id": "c", "language": "python"}`, wantCode: 400,
		},
		"a language the dashboard does not run: 400": {
			path: run, token: "alice-token", body: `{"code": "1", "language": "r"}`, wantCode: 400,
		},
		"a context ID that would move the agent's path: 400": {
			path: run + "/contexts/..%2Fexecute/restart", token: "alice-token", wantCode: 400,
		},
		"a context the interpreter does not have: its 404 and message": {
			path: run, token: "alice-token", body: `{"code": "1", "context_id": "gone"}`, code: 404, answer: "Context gone not found",
			wantCode: 404, wantSent: []string{`POST /execute Bearer agent-token {"code":"1","context_id":"gone"}`},
		},
		"a context is created for the page's language": {
			path: run + "/contexts", token: "alice-token", body: `{"language": "bash", "cwd": "/etc"}`, code: 200,
			answer:   `{"id":"ctx-2","language":"bash","cwd":"/home/user"}`,
			wantCode: 200, wantBody: `{"id":"ctx-2","language":"bash","cwd":"/home/user"}` + "\n",
			wantSent: []string{`POST /contexts Bearer agent-token {"language":"bash"}`},
		},
		"a context is restarted": {
			path: run + "/contexts/ctx-2/restart", token: "alice-token", code: 200,
			wantCode: 200, wantBody: `{"id":"ctx-2","restarted":true}` + "\n",
			wantSent: []string{`POST /contexts/ctx-2/restart Bearer agent-token `},
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeInterpreter{code: tc.code, body: tc.answer}
			h := newCodeHandler(t, f)
			r := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			r.Header.Set("Authorization", "Bearer "+tc.token)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantCode {
				t.Fatalf("POST %s: %d %s; want %d", tc.path, w.Code, w.Body.String(), tc.wantCode)
			}
			if tc.wantBody != "" {
				if diff := cmp.Diff(tc.wantBody, w.Body.String()); diff != "" {
					t.Errorf("POST %s answered (-want +got):\n%s", tc.path, diff)
				}
			}
			if tc.wantCode == 404 && !strings.Contains(w.Body.String(), "Context gone not found") {
				t.Errorf("POST %s: %s; want the interpreter's message in it", tc.path, w.Body.String())
			}
			if diff := cmp.Diff(tc.wantSent, f.got); diff != "" {
				t.Errorf("What reached the code interpreter (-want +got):\n%s", diff)
			}
		})
	}
}
