package pyruntime

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// response is what a test expects of an answer; body is compared byte for byte.
type response struct {
	code   int
	body   string
	header map[string]string
}

func checkResponse(t *testing.T, w *httptest.ResponseRecorder, want response) {
	t.Helper()
	if w.Code != want.code {
		t.Errorf("status %d, want %d (body %s)", w.Code, want.code, w.Body)
	}
	if got := w.Body.String(); got != want.body {
		t.Errorf("body\n got %s\nwant %s", got, want.body)
	}
	for k, v := range want.header {
		if got := w.Header().Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

var jsonType = map[string]string{"Content-Type": "application/json"}

func TestRoutes(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{})
	cases := map[string]struct {
		method, path string
		want         response
	}{
		"health": {method: "GET", path: "/",
			want: response{200, `{"status":"ok","message":"Sandbox Runtime is active."}`, jsonType}},
		"health by POST": {method: "POST", path: "/",
			want: response{405, `{"detail":"Method Not Allowed"}`, map[string]string{"Allow": "GET"}}},
		"execute by GET": {method: "GET", path: "/execute",
			want: response{405, `{"detail":"Method Not Allowed"}`, map[string]string{"Allow": "POST"}}},
		"upload by PUT": {method: "PUT", path: "/upload",
			want: response{405, `{"detail":"Method Not Allowed"}`, map[string]string{"Allow": "POST"}}},
		"download by HEAD": {method: "HEAD", path: "/download/file.txt",
			want: response{405, `{"detail":"Method Not Allowed"}`, map[string]string{"Allow": "GET"}}},
		"list by POST": {method: "POST", path: "/list/sub",
			want: response{405, `{"detail":"Method Not Allowed"}`, map[string]string{"Allow": "GET"}}},
		"exists by DELETE": {method: "DELETE", path: "/exists/file.txt",
			want: response{405, `{"detail":"Method Not Allowed"}`, map[string]string{"Allow": "GET"}}},
		"unknown path": {method: "GET", path: "/v1/files/x",
			want: response{404, `{"detail":"Not Found"}`, jsonType}},
		"prefix without slash": {method: "GET", path: "/listing",
			want: response{404, `{"detail":"Not Found"}`, jsonType}},
		"list without slash": {method: "GET", path: "/list",
			want: response{307, "", map[string]string{"Location": "/list/"}}},
		"download without slash": {method: "GET", path: "/download",
			want: response{307, "", map[string]string{"Location": "/download/"}}},
		"exists without slash": {method: "GET", path: "/exists",
			want: response{307, "", map[string]string{"Location": "/exists/"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
			checkResponse(t, w, tc.want)
		})
	}
}

func TestNotFoundFallback(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{NotFound: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})})
	if w := get(h, "/v1/files/x"); w.Code != http.StatusTeapot {
		t.Errorf("unknown path: status %d, want the fallback's 418", w.Code)
	}
	if w := get(h, "/exists/file.txt"); w.Code != http.StatusOK {
		t.Errorf("known path: status %d, want 200 from the python-runtime API", w.Code)
	}
}

func TestExecute(t *testing.T) {
	fx := newFixture(t)
	cases := map[string]struct {
		body     string
		runner   *fakeRunner
		opts     Options
		wantArgv []string // nil: the runner must not run
		want     response
	}{
		"simple": {
			body: `{"command":"echo hello"}`, runner: &fakeRunner{stdout: "hello\n"},
			wantArgv: []string{"echo", "hello"},
			want:     response{200, `{"stdout":"hello\n","stderr":"","exit_code":0}`, jsonType},
		},
		"quotes and escapes, no shell": {
			body:     `{"command":"python3 -c \"print('a b')\" 'x y' a\\ b $HOME *.py"}`,
			wantArgv: []string{"python3", "-c", "print('a b')", "x y", "a b", "$HOME", "*.py"},
			want:     response{200, `{"stdout":"","stderr":"","exit_code":0}`, jsonType},
		},
		"exit code and stderr": {
			body: `{"command":"false"}`, runner: &fakeRunner{stdout: "out", stderr: "bad thing\n", code: 3},
			wantArgv: []string{"false"},
			want:     response{200, `{"stdout":"out","stderr":"bad thing\n","exit_code":3}`, jsonType},
		},
		"killed by a signal": {
			body: `{"command":"x"}`, runner: &fakeRunner{code: -9},
			wantArgv: []string{"x"},
			want:     response{200, `{"stdout":"","stderr":"","exit_code":-9}`, jsonType},
		},
		"universal newlines, no HTML escaping": {
			body: `{"command":"x"}`, runner: &fakeRunner{stdout: "a\r\nb\rc\n<&>", stderr: "\r"},
			wantArgv: []string{"x"},
			want:     response{200, `{"stdout":"a\nb\nc\n<&>","stderr":"\n","exit_code":0}`, jsonType},
		},
		"output that is not UTF-8": {
			body: `{"command":"x"}`, runner: &fakeRunner{stdout: "ok\xff"},
			wantArgv: []string{"x"},
			want:     response{200, `{"stdout":"ok` + "\ufffd" + `","stderr":"","exit_code":0}`, jsonType},
		},
		"other members ignored, last command wins": {
			body:     `{"command":"first","timeout":5,"command":"second"}`,
			wantArgv: []string{"second"},
			want:     response{200, `{"stdout":"","stderr":"","exit_code":0}`, jsonType},
		},
		"runner error": {
			body: `{"command":"sh -c true"}`, runner: &fakeRunner{err: errors.New(`the agent is shutting down`)},
			wantArgv: []string{"sh", "-c", "true"},
			want:     response{200, `{"stdout":"","stderr":"Failed to execute command: the agent is shutting down","exit_code":1}`, jsonType},
		},
		"program not found, as Python says it": {
			body: `{"command":"kubox-nope --flag"}`, runner: &fakeRunner{err: errors.New(`spec.argv[0]: not found`)},
			wantArgv: []string{"kubox-nope", "--flag"},
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: [Errno 2] No such file or directory: ` +
				`'kubox-nope'","exit_code":1}`, jsonType},
		},
		"output over the limit": {
			body: `{"command":"x"}`, runner: &fakeRunner{stdout: "partial", err: &OutputLimitError{Stream: "stderr", Limit: 3 << 20}},
			opts:     Options{MaxOutputBytes: 3 << 20, OutputLimitSetting: "--the-setting"},
			wantArgv: []string{"x"},
			want: response{507, `{"stdout":"","stderr":"Failed to execute command: the command wrote more than the ` +
				`limit of 3145728 bytes (3 MiB) to stderr, so it was killed and none of its output is returned ` +
				`(never a part of it): raise --the-setting, or have the command write its output to a file and ` +
				`download that","exit_code":1}`, jsonType},
		},
		"no output limit": {
			body: `{"command":"x"}`, opts: Options{MaxOutputBytes: -1},
			wantArgv: []string{"x"},
			want:     response{200, `{"stdout":"","stderr":"","exit_code":0}`, jsonType},
		},
		"timeout": {
			body: `{"command":"sleep 'it''s' infinity"}`, runner: &fakeRunner{stdout: "partial", err: ErrTimeout},
			opts:     Options{ExecTimeout: 5 * time.Second},
			wantArgv: []string{"sleep", "its", "infinity"},
			want:     response{200, `{"stdout":"","stderr":"Failed to execute command: Command '['sleep', 'its', 'infinity']' timed out after 5.0 seconds","exit_code":1}`, jsonType},
		},
		"unclosed quote": {
			body: `{"command":"echo 'unterminated"}`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: No closing quotation","exit_code":1}`, jsonType},
		},
		"trailing backslash": {
			body: `{"command":"echo \\"}`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: No escaped character","exit_code":1}`, jsonType},
		},
		"empty command": {
			body: `{"command":"  "}`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: the command is empty","exit_code":1}`, jsonType},
		},
		"missing command": {
			body: `{"cmd":"ls"}`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: the request body has no \"command\"; send {\"command\": \"...\"}","exit_code":1}`, jsonType},
		},
		"command not a string": {
			body: `{"command":["ls"]}`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: \"command\" is not a string; send {\"command\": \"...\"}","exit_code":1}`, jsonType},
		},
		"command null": {
			body: `{"command":null}`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: \"command\" is not a string; send {\"command\": \"...\"}","exit_code":1}`, jsonType},
		},
		"body null": {
			body: `null`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: the request body is null; send {\"command\": \"...\"}","exit_code":1}`, jsonType},
		},
		"body not an object": {
			body: `"ls"`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: the request body is not a JSON object {\"command\": \"...\"}: json: cannot unmarshal string into Go value of type map[string]json.RawMessage","exit_code":1}`, jsonType},
		},
		"empty body": {
			body: ``,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: the request body is not a JSON object {\"command\": \"...\"}: EOF","exit_code":1}`, jsonType},
		},
		"two objects": {
			body: `{"command":"ls"}{"command":"rm"}`,
			want: response{200, `{"stdout":"","stderr":"Failed to execute command: the request body has more after its JSON object; send one object {\"command\": \"...\"}","exit_code":1}`, jsonType},
		},
		"body over the limit": {
			body: `{"command":"` + strings.Repeat("x", 100) + `"}`, opts: Options{MaxJSONBytes: 64},
			want: response{413, `{"stdout":"","stderr":"Failed to execute command: the request body exceeds the limit of 64 bytes","exit_code":1}`, jsonType},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			runner := tc.runner
			if runner == nil {
				runner = &fakeRunner{}
			}
			h := fx.handler(t, runner, tc.opts)
			w := post(h, "/execute", "application/json", strings.NewReader(tc.body))
			checkResponse(t, w, tc.want)
			var want []runCall
			if tc.wantArgv != nil {
				timeout := tc.opts.ExecTimeout
				if timeout == 0 {
					timeout = DefaultExecTimeout
				}
				maxOutput := max(tc.opts.MaxOutputBytes, 0)
				if tc.opts.MaxOutputBytes == 0 {
					maxOutput = DefaultMaxOutputBytes
				}
				want = []runCall{{Argv: tc.wantArgv, Dir: fx.base, Timeout: timeout, MaxOutput: maxOutput}}
			}
			if diff := cmp.Diff(want, runner.Calls()); diff != "" {
				t.Errorf("runner calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExecuteStopsWhenTheClientGoesAway(t *testing.T) {
	fx := newFixture(t)
	runner := &fakeRunner{running: make(chan struct{})}
	h := fx.handler(t, runner, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/execute", strings.NewReader(`{"command":"sleep 1000"}`))
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, r)
	}()
	<-runner.running
	cancel()
	<-done
	checkResponse(t, w, response{200, `{"stdout":"","stderr":"Failed to execute command: context canceled","exit_code":1}`, nil})
}

// TestExecuteRuns runs real commands through a Runner built on os/exec.
func TestExecuteRuns(t *testing.T) {
	fx := newFixture(t)
	cases := map[string]struct {
		command string
		opts    Options
		want    string
	}{
		"echo": {command: "echo hello", want: `{"stdout":"hello\n","stderr":"","exit_code":0}`},
		"runs in the base directory": {command: "pwd -P",
			want: `{"stdout":"` + fx.resolver.root + `\n","stderr":"","exit_code":0}`},
		"no shell": {command: "echo $HOME '*' > x",
			want: `{"stdout":"$HOME * > x\n","stderr":"","exit_code":0}`},
		"stderr and exit code": {command: `sh -c 'echo out; echo err >&2; exit 3'`,
			want: `{"stdout":"out\n","stderr":"err\n","exit_code":3}`},
		"killed by a signal": {command: `sh -c 'kill -TERM $$'`,
			want: `{"stdout":"","stderr":"","exit_code":-15}`},
		"timeout kills it": {command: "sleep 600", opts: Options{ExecTimeout: 50 * time.Millisecond},
			want: `{"stdout":"","stderr":"Failed to execute command: Command '['sleep', '600']' timed out after 0.05 seconds","exit_code":1}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := fx.handler(t, execRunner{}, tc.opts)
			w := post(h, "/execute", "application/json", strings.NewReader(`{"command":`+jsonString(tc.command)+`}`))
			checkResponse(t, w, response{200, tc.want, nil})
		})
	}
	// What Python's subprocess raises when it cannot start the program, str()-ed.
	if err := os.WriteFile(filepath.Join(fx.base, "script.sh"), []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for command, oserror := range map[string]string{
		"kubox-no-such-command --flag": "[Errno 2] No such file or directory: 'kubox-no-such-command'",
		"./missing":                    "[Errno 2] No such file or directory: './missing'",
		"/kubox/no/such/program":       "[Errno 2] No such file or directory: '/kubox/no/such/program'",
		"./script.sh":                  "[Errno 13] Permission denied: './script.sh'",
		"sub":                          "[Errno 2] No such file or directory: 'sub'", // not looked up in the base directory
		"./sub":                        "[Errno 13] Permission denied: './sub'",
		"./file.txt/x":                 "[Errno 20] Not a directory: './file.txt/x'",
	} {
		t.Run(command, func(t *testing.T) {
			h := fx.handler(t, execRunner{}, Options{})
			w := post(h, "/execute", "application/json", strings.NewReader(`{"command":`+jsonString(command)+`}`))
			checkResponse(t, w, response{200, `{"stdout":"","stderr":` + jsonString("Failed to execute command: "+oserror) + `,"exit_code":1}`, nil})
		})
	}
}

func TestNew(t *testing.T) {
	fx := newFixture(t)
	if _, err := New(Options{Runner: &fakeRunner{}}); err == nil {
		t.Error("New without a Resolver: no error")
	}
	if _, err := New(Options{Resolver: fx.resolver}); err == nil {
		t.Error("New without a Runner: no error")
	}
	if _, err := New(Options{Resolver: fx.resolver, Runner: &fakeRunner{}, MaxJSONBytes: -1}); err == nil {
		t.Error("New with a negative body limit: no error")
	}
	h, err := New(Options{Resolver: fx.resolver, Runner: &fakeRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	// 0 stands for no limit inside the Handler.
	got := []any{h.baseDir, h.execTimeout, h.maxJSONBytes, h.maxOutputBytes, h.maxUploadBytes}
	want := []any{"/app", 300 * time.Second, int64(1 << 20), int64(64 << 20), int64(0)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	h, err = New(Options{Resolver: fx.resolver, Runner: &fakeRunner{}, MaxOutputBytes: -1, MaxUploadBytes: 5})
	if err != nil {
		t.Fatal(err)
	}
	if h.maxOutputBytes != 0 || h.maxUploadBytes != 5 {
		t.Errorf("limits -1 and 5 became %d and %d; want 0 (none) and 5", h.maxOutputBytes, h.maxUploadBytes)
	}
}

func TestLoadEnv(t *testing.T) {
	cases := map[string]struct {
		env     map[string]string
		want    Options
		wantErr string
	}{
		"unset":        {env: nil, want: Options{BaseDir: "/keep", ExecTimeout: time.Minute}},
		"empty values": {env: map[string]string{EnvBaseDir: "", EnvExecTimeout: " "}, want: Options{BaseDir: "/keep", ExecTimeout: time.Minute}},
		"both":         {env: map[string]string{EnvBaseDir: "/workspace", EnvExecTimeout: "5"}, want: Options{BaseDir: "/workspace", ExecTimeout: 5 * time.Second}},
		"fraction":     {env: map[string]string{EnvExecTimeout: " 2.5 "}, want: Options{BaseDir: "/keep", ExecTimeout: 2500 * time.Millisecond}},
		"zero":         {env: map[string]string{EnvExecTimeout: "0"}, wantErr: `SANDBOX_EXEC_TIMEOUT_SECONDS="0" is not a positive number of seconds`},
		"negative":     {env: map[string]string{EnvExecTimeout: "-1"}, wantErr: "not a positive number"},
		"nan":          {env: map[string]string{EnvExecTimeout: "nan"}, wantErr: "not a positive number"},
		"inf":          {env: map[string]string{EnvExecTimeout: "inf"}, wantErr: "not a positive number"},
		"words":        {env: map[string]string{EnvExecTimeout: "five"}, wantErr: "not a positive number"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := Options{BaseDir: "/keep", ExecTimeout: time.Minute}
			err := o.LoadEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o, cmp.Comparer(func(a, b Options) bool {
				return a.BaseDir == b.BaseDir && a.ExecTimeout == b.ExecTimeout
			})); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPythonFormatting(t *testing.T) {
	got := []string{
		pyList([]string{"sleep", "it's", `say "hi"`, `both ' "`, "a\\b\n\x01"}),
		pyFloat(300), pyFloat(0.05), pyFloat(1712345678.5), pyFloat(-2),
		pyQuote("sub/a b+é~_.-"),
		contentDisposition("sub/file.txt"), contentDisposition("a b.txt"), contentDisposition(`q".txt`),
	}
	want := []string{
		`['sleep', "it's", 'say "hi"', 'both \' "', 'a\\b\n\x01']`,
		"300.0", "0.05", "1712345678.5", "-2.0",
		"sub/a%20b%2B%C3%A9~_.-",
		`attachment; filename="sub/file.txt"`, `attachment; filename*=utf-8''a%20b.txt`, `attachment; filename*=utf-8''q%22.txt`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
