package codeinterp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
)

// TestStateAcrossExecutions: variables, imports and the working directory of a context stay
// between executions, and the last expression's value is the main result, in every language.
func TestStateAcrossExecutions(t *testing.T) {
	s := startSandbox(t)
	cases := map[string]struct {
		language string
		steps    []string
		want     execution // of the last step: its main result and stdout
	}{
		"python": {language: "python", steps: []string{"x = 41", "import os\nos.chdir('sub')", "print(os.getcwd().endswith('/sub'))\nx + 1"},
			want: execution{Stdout: "True\n", Results: []codeinterp.Message{result("42", true)}}},
		"python string result": {language: "python", steps: []string{"s = 'kubox'", "s"},
			want: execution{Results: []codeinterp.Message{result("kubox", true)}}},
		"javascript": {language: "javascript", steps: []string{"var x = 41", "const y = 1; process.chdir('sub')", "console.log(process.cwd().endsWith('/sub')); x + y"},
			want: execution{Stdout: "true\n", Results: []codeinterp.Message{result("42", true)}}},
		"js alias": {language: "js", steps: []string{"globalThis.z = 'a'", "z + 'b'"},
			want: execution{Results: []codeinterp.Message{result("ab", true)}}},
		"bash": {language: "bash", steps: []string{"X=41", "cd sub; f() { echo $((X + 1)); }", "f; basename \"$PWD\""},
			want: execution{Stdout: "42\nsub\n"}},
	}
	touchDir(t, filepath.Join(s.root, "sub"))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := s.createContext(t, codeinterp.CreateContextRequest{Language: tc.language})
			var last execution
			for _, code := range tc.steps {
				last = s.run(t, codeinterp.ExecuteRequest{Code: code, ContextID: c.ID})
				if last.Error != nil {
					t.Fatalf("%q failed: %s: %s\n%s", code, *last.Error.Name, *last.Error.Value, *last.Error.Traceback)
				}
			}
			got := execution{Stdout: last.Stdout, Results: last.Results}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("the last execution (-want +got):\n%s", diff)
			}
			if last.Count != len(tc.steps) {
				t.Errorf("number_of_executions = %d, want %d", last.Count, len(tc.steps))
			}
		})
	}
}

// TestDefaultContextPerLanguage: an execution that names a language (or none: Python) runs in
// that language's default context, which keeps its state too.
func TestDefaultContextPerLanguage(t *testing.T) {
	s := startSandbox(t)
	s.run(t, codeinterp.ExecuteRequest{Code: "x = 41"})
	if got := s.run(t, codeinterp.ExecuteRequest{Code: "x + 1", Language: "python"}).main(); got != "42" {
		t.Errorf("x + 1 in the default Python context = %q, want 42", got)
	}
	s.run(t, codeinterp.ExecuteRequest{Code: "var x = 1", Language: "javascript"})
	if got := s.run(t, codeinterp.ExecuteRequest{Code: "typeof x", Language: "js"}).main(); got != "number" {
		t.Errorf("typeof x in the default JavaScript context = %q, want number", got)
	}
}

func result(text string, main bool) codeinterp.Message {
	return codeinterp.Message{Type: "result", Text: text, IsMainResult: &main}
}

// TestOutputStreamsAsPrinted: the first print reaches the client while the code still runs
// (it waits for a file the test creates only after reading that output), before the second.
func TestOutputStreamsAsPrinted(t *testing.T) {
	s := startSandbox(t)
	gate := filepath.Join(s.root, "go-on")
	code := "print('first')\n" + waitFileCode(gate) + "print('second')\nimport sys\nprint('oops', file=sys.stderr)"
	st := s.start(guardCtx(t), t, codeinterp.ExecuteRequest{Code: code})
	// The output as it came: stdout before the gate opened, stdout and stderr after (two pipes:
	// their order between each other is not kept), the end.
	var got []string
	var before string
	after := map[string]string{}
	gated := false
	for {
		m, ok := st.next(t)
		if !ok {
			break
		}
		switch {
		case m.Type == "stdout" && !gated:
			if before += m.Text; before == "first\n" {
				touch(t, gate) // the code waits for it: "first" came while the code ran
				gated = true
				got = append(got, "before:"+before)
			}
		case m.Type == "stdout" || m.Type == "stderr":
			after[m.Type] += m.Text
		case m.Type == "end_of_execution":
			got = append(got, "after:"+after["stdout"]+"|"+after["stderr"], "end")
		}
	}
	want := []string{"before:first\n", "after:second\n|oops\n", "end"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestErrors: an exception comes back with its name, value and a traceback of the user's code
// (not the driver's), in each language; output before it is kept.
func TestErrors(t *testing.T) {
	s := startSandbox(t)
	cases := map[string]struct {
		language, code      string
		name, value         string
		stdout, inTraceback string
		notInTraceback      string
	}{
		"python": {language: "python", code: "print('before')\ndef f():\n    return 1/0\nf()", name: "ZeroDivisionError",
			value: "division by zero", stdout: "before\n", inTraceback: "return 1/0", notInTraceback: "<string>"},
		"python syntax": {language: "python", code: "def (", name: "SyntaxError", inTraceback: "SyntaxError"},
		"javascript": {language: "javascript", code: "console.log('before'); throw new TypeError('bad')", name: "TypeError",
			value: "bad", stdout: "before\n", inTraceback: "TypeError: bad", notInTraceback: "[eval]"},
		"bash": {language: "bash", code: "echo before; false", name: "ExitStatus", value: "1", stdout: "before\n", inTraceback: "status 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := s.run(t, codeinterp.ExecuteRequest{Code: tc.code, Language: tc.language})
			if e.Error == nil {
				t.Fatalf("%q gave no error: %+v", tc.code, e)
			}
			if *e.Error.Name != tc.name || (tc.value != "" && *e.Error.Value != tc.value) {
				t.Errorf("error = %s: %s, want %s: %s", *e.Error.Name, *e.Error.Value, tc.name, tc.value)
			}
			if !strings.Contains(*e.Error.Traceback, tc.inTraceback) {
				t.Errorf("traceback has no %q:\n%s", tc.inTraceback, *e.Error.Traceback)
			}
			if tc.notInTraceback != "" && strings.Contains(*e.Error.Traceback, tc.notInTraceback) {
				t.Errorf("traceback shows the driver (%q):\n%s", tc.notInTraceback, *e.Error.Traceback)
			}
			if e.Stdout != tc.stdout {
				t.Errorf("stdout = %q, want %q", e.Stdout, tc.stdout)
			}
		})
	}
}

// TestContexts: create, list, restart (the state is gone, the context stays) and remove.
func TestContexts(t *testing.T) {
	s := startSandbox(t)
	touchDir(t, filepath.Join(s.root, "work"))
	c := s.createContext(t, codeinterp.CreateContextRequest{Language: "python", Cwd: "/work"})
	if want := (codeinterp.Context{ID: c.ID, Language: "python", Cwd: filepath.Join(s.root, "work")}); c != want {
		t.Errorf("POST /contexts = %+v, want %+v", c, want)
	}
	if got := s.run(t, codeinterp.ExecuteRequest{Code: "import os\ny = 1\nos.getcwd()", ContextID: c.ID}).main(); got != filepath.Join(s.root, "work") {
		t.Errorf("the context's cwd = %q", got)
	}
	var list []codeinterp.Context
	s.getJSON(t, "/contexts", &list)
	if diff := cmp.Diff([]codeinterp.Context{c}, list); diff != "" {
		t.Errorf("GET /contexts (-want +got):\n%s", diff)
	}
	if code, body := s.status(t, http.MethodPost, "/contexts/"+c.ID+"/restart", nil); code != http.StatusOK {
		t.Fatalf("restart: %d %s", code, body)
	}
	e := s.run(t, codeinterp.ExecuteRequest{Code: "y", ContextID: c.ID})
	if e.Error == nil || *e.Error.Name != "NameError" {
		t.Errorf("y after a restart = %+v, want a NameError", e)
	}
	if code, body := s.status(t, http.MethodDelete, "/contexts/"+c.ID, nil); code != http.StatusOK {
		t.Fatalf("remove: %d %s", code, body)
	}
	s.getJSON(t, "/contexts", &list)
	if len(list) != 0 {
		t.Errorf("GET /contexts after the remove = %+v, want none", list)
	}
	for name, req := range map[string]struct {
		method, path string
		body         any
		want         int
	}{
		"execute in a removed context": {http.MethodPost, "/execute", codeinterp.ExecuteRequest{Code: "1", ContextID: c.ID}, http.StatusNotFound},
		"restart a removed context":    {http.MethodPost, "/contexts/" + c.ID + "/restart", nil, http.StatusNotFound},
		"remove a removed context":     {http.MethodDelete, "/contexts/" + c.ID, nil, http.StatusNotFound},
		"context and language":         {http.MethodPost, "/execute", codeinterp.ExecuteRequest{Code: "1", ContextID: c.ID, Language: "python"}, http.StatusBadRequest},
		"cwd outside the root":         {http.MethodPost, "/contexts", codeinterp.CreateContextRequest{Cwd: "/../../etc"}, http.StatusBadRequest},
		"cwd that is missing":          {http.MethodPost, "/contexts", codeinterp.CreateContextRequest{Cwd: "/nope"}, http.StatusBadRequest},
	} {
		t.Run(name, func(t *testing.T) {
			if code, body := s.status(t, req.method, req.path, req.body); code != req.want {
				t.Errorf("%s %s = %d %s, want %d", req.method, req.path, code, body, req.want)
			}
		})
	}
}

// TestUnsupportedLanguage: a language kubox has no interpreter for is refused naming the ones it
// has.
func TestUnsupportedLanguage(t *testing.T) {
	s := startSandbox(t)
	for name, req := range map[string]struct {
		path string
		body any
	}{
		"create":  {"/contexts", codeinterp.CreateContextRequest{Language: "ruby"}},
		"execute": {"/execute", codeinterp.ExecuteRequest{Code: "1", Language: "ruby"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, body := s.status(t, http.MethodPost, req.path, req.body)
			if code != http.StatusBadRequest || !strings.Contains(body, `"ruby"`) || !strings.Contains(body, `"python", "javascript" (or "js") and "bash"`) {
				t.Errorf("POST %s ruby = %d %q, want 400 naming ruby and the supported languages", req.path, code, body)
			}
		})
	}
}

// TestMatplotlibFigureIsPNG: a figure the code draws comes back as a PNG result (matplotlib's
// Agg backend, the figures open at the end of the execution), besides the main result.
func TestMatplotlibFigureIsPNG(t *testing.T) {
	s := startSandbox(t)
	if e := s.run(t, codeinterp.ExecuteRequest{Code: "import matplotlib"}); e.Error != nil {
		t.Fatalf("the host's /usr/bin/python3 has no matplotlib (%s): run make python-deps (python3-matplotlib)", *e.Error.Value)
	}
	e := s.run(t, codeinterp.ExecuteRequest{Code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\n'drawn'"})
	if e.Error != nil {
		t.Fatalf("plotting failed: %s\n%s", *e.Error.Value, *e.Error.Traceback)
	}
	var pngs int
	for _, r := range e.Results {
		if r.PNG == "" {
			continue
		}
		pngs++
		b, err := base64.StdEncoding.DecodeString(r.PNG)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("the figure's png is not a base64 PNG (%v): %.40q", err, r.PNG)
		}
		if *r.IsMainResult {
			t.Errorf("the figure is the main result; want a display result beside it")
		}
	}
	if pngs != 1 || e.main() != "drawn" {
		t.Errorf("got %d PNG results and main result %q; want 1 and drawn", pngs, e.main())
	}
	// The figure was shown and closed: the next execution returns no image.
	if e := s.run(t, codeinterp.ExecuteRequest{Code: "1"}); len(e.Results) != 1 || e.Results[0].PNG != "" {
		t.Errorf("the next execution's results = %+v, want only its main result", e.Results)
	}
}

// TestRichResults: _repr_*_ methods give the MIME bundle E2B's client reads.
func TestRichResults(t *testing.T) {
	s := startSandbox(t)
	code := `class R:
    def _repr_html_(self): return "<b>hi</b>"
    def _repr_markdown_(self): return "**hi**"
    def _repr_svg_(self): return "<svg/>"
    def _repr_json_(self): return {"a": 1}
    def _repr_latex_(self): return "$x$"
    def __repr__(self): return "R()"
R()`
	e := s.run(t, codeinterp.ExecuteRequest{Code: code})
	main := true
	want := []codeinterp.Message{{Type: "result", Text: "R()", HTML: "<b>hi</b>", Markdown: "**hi**", SVG: "<svg/>",
		JSON: []byte(`{"a":1}`), LaTeX: "$x$", IsMainResult: &main}}
	if diff := cmp.Diff(want, e.Results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestInterruptKeepsContext: a client that closes the stream (its timeout, or a cancel)
// interrupts the running loop with SIGINT; the context and its state stay, in every language.
func TestInterruptKeepsContext(t *testing.T) {
	s := startSandbox(t)
	cases := map[string]struct {
		language, set, loop, check string
	}{
		"python":     {"python", "kept = 'yes'", "print('looping', flush=True)\nwhile True:\n    pass", "kept"},
		"javascript": {"javascript", "var kept = 'yes'", "console.log('looping'); while (true) {}", "kept"},
		"bash":       {"bash", "kept=yes", "echo looping; while :; do sleep 0.05; done", "echo $kept"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := s.createContext(t, codeinterp.CreateContextRequest{Language: tc.language})
			s.run(t, codeinterp.ExecuteRequest{Code: tc.set, ContextID: c.ID})
			ctx, cancel := context.WithCancel(guardCtx(t))
			st := s.start(ctx, t, codeinterp.ExecuteRequest{Code: tc.loop, ContextID: c.ID})
			for {
				m, ok := st.next(t)
				if !ok {
					t.Fatal("the loop's execution ended before it printed")
				}
				if m.Type == "stdout" && strings.Contains(m.Text, "looping") {
					break
				}
			}
			cancel() // as the SDK's timeoutMs aborts the request
			e := s.run(t, codeinterp.ExecuteRequest{Code: tc.check, ContextID: c.ID})
			if e.Error != nil {
				t.Fatalf("after the interrupt: %s: %s", *e.Error.Name, *e.Error.Value)
			}
			if got := e.main() + e.Stdout; strings.TrimSpace(got) != "yes" {
				t.Errorf("the state after the interrupt = %q, want yes", got)
			}
		})
	}
}

// TestEnvVarsApplyToOneExecution: env_vars are set for that execution only, as E2B's server
// restores them after it (to the interpreter's own value, or unset).
func TestEnvVarsApplyToOneExecution(t *testing.T) {
	s := startSandbox(t)
	cases := map[string]struct {
		language, read string
	}{
		"python":     {"python", "import os\nprint(os.environ.get('KUBOX_V', '-'), os.environ.get('HOME') == os.environ.get('KUBOX_H'))"},
		"javascript": {"javascript", "console.log(process.env.KUBOX_V ?? '-', process.env.HOME === process.env.KUBOX_H)"},
		"bash":       {"bash", "echo \"${KUBOX_V:--}\" $([ \"$HOME\" = \"$KUBOX_H\" ] && echo True || echo False)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := s.createContext(t, codeinterp.CreateContextRequest{Language: tc.language})
			with := s.run(t, codeinterp.ExecuteRequest{Code: tc.read, ContextID: c.ID, EnvVars: map[string]string{"KUBOX_V": "it's set", "HOME": "/h", "KUBOX_H": "/h"}})
			after := s.run(t, codeinterp.ExecuteRequest{Code: tc.read, ContextID: c.ID})
			got := []string{strings.ToLower(with.Stdout), strings.ToLower(after.Stdout)}
			want := []string{"it's set true\n", "- false\n"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("with env_vars, then without (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChildProcessOutput: what the code's child processes write to the inherited stdout is the
// execution's stdout too, before its end.
func TestChildProcessOutput(t *testing.T) {
	s := startSandbox(t)
	for name, tc := range map[string]struct{ language, code string }{
		"python":     {"python", "import os, subprocess\nos.system('echo child')\nsubprocess.run(['echo', 'grandchild'])"},
		"javascript": {"javascript", "const cp = require('child_process'); cp.execSync('echo child', {stdio: 'inherit'}); cp.execSync('echo grandchild', {stdio: 'inherit'}); undefined"},
		"bash":       {"bash", "sh -c 'echo child'; (echo grandchild)"},
	} {
		t.Run(name, func(t *testing.T) {
			e := s.run(t, codeinterp.ExecuteRequest{Code: tc.code, Language: tc.language})
			if e.Error != nil || e.Stdout != "child\ngrandchild\n" {
				t.Errorf("stdout = %q (error %v), want the children's lines", e.Stdout, e.Error)
			}
		})
	}
}
