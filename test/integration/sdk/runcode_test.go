package sdk

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// codeFixture is a namespace whose sandboxes (pool "python" of 2) each get a real kubox-agent on
// a loopback IP of their own, serving the code interpreter on its contract port (49999), and a
// router; the client claims through the router as a ServiceAccount allowed to connect.
type codeFixture struct {
	ns        string
	key       []byte
	sdk       *kubox.Client
	routerURL string
	devToken  string
}

func setupCode(t *testing.T) *codeFixture {
	t.Helper()
	a := env.StartAgentNamespace(t, agentImage, nil)
	f := &codeFixture{ns: a.NS, key: a.Key}
	env.Create(t, a.Template("python").Obj())
	env.Create(t, testutil.MakePool("python", f.ns, "python").Replicas(2).Obj())
	_, f.routerURL = env.StartRouter(t, f.ns, f.key, nil)
	f.devToken = claimerToken(t, f.ns, "dev")
	c, err := kubox.New(env.ConfigFor(f.devToken), kubox.Options{Namespace: f.ns, RouterURL: f.routerURL, ReadyTimeout: readyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	f.sdk = c
	return f
}

// TestRunCodeThroughTheRouter drives RunCode through a real kubox-router to a real agent's code
// interpreter: state kept between calls of the default context, the last expression as the main
// result, an exception as an Error with a traceback, stdout streamed to the callback while the
// code still runs, and contexts (create, list, restart, remove) that keep their state apart.
func TestRunCodeThroughTheRouter(t *testing.T) {
	f := setupCode(t)
	ctx := t.Context()
	sb, err := f.sdk.Claim(ctx, kubox.FromPool("python"))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}

	if exec, err := sb.RunCode(ctx, "x = 41", nil); err != nil || exec.Error != nil {
		t.Fatalf("RunCode(x = 41) = %+v, %v", exec, err)
	}
	exec, err := sb.RunCode(ctx, "x + 1", nil)
	if err != nil {
		t.Fatalf("RunCode(x + 1): %v", err)
	}
	want := []kubox.CodeResult{{Text: "42", IsMainResult: true}}
	if diff := cmp.Diff(want, exec.Results); diff != "" || exec.Error != nil || exec.ExecutionCount != 2 {
		t.Errorf("RunCode(x + 1): results (-want +got):\n%s error %+v, execution count %d (want 2)", diff, exec.Error, exec.ExecutionCount)
	}

	exec, err = sb.RunCode(ctx, "def f():\n    return 1 / 0\nf()", nil)
	if err != nil {
		t.Fatalf("RunCode(1 / 0): %v", err)
	}
	if e := exec.Error; e == nil || e.Name != "ZeroDivisionError" || !strings.Contains(e.Value, "division by zero") ||
		!strings.Contains(e.Traceback, "return 1 / 0") {
		t.Errorf("RunCode(1 / 0).Error = %+v; want ZeroDivisionError, its message and a traceback naming the line", e)
	}
	if len(exec.Results) != 0 {
		t.Errorf("RunCode(1 / 0).Results = %+v; want none", exec.Results)
	}

	exec, err = sb.RunCode(ctx, "import os\nos.environ['GREETING']", &kubox.RunCodeOptions{Envs: map[string]string{"GREETING": "hello"}})
	if err != nil || exec.Text() != "hello" {
		t.Errorf("RunCode with Envs = %+v, %v; want the main result hello", exec, err)
	}
	if exec, err := sb.RunCode(ctx, "const n = 2; n + 1", &kubox.RunCodeOptions{Language: kubox.LanguageJavaScript}); err != nil || exec.Text() != "3" {
		t.Errorf("RunCode in JavaScript = %+v, %v; want the main result 3", exec, err)
	}

	t.Run("stdout streams as printed", func(t *testing.T) { testRunCodeStreams(t, sb) })
	t.Run("contexts", func(t *testing.T) { testCodeContexts(t, sb) })
}

// testRunCodeStreams runs code that prints a line and then waits for a file that only the stdout
// callback creates, on seeing that line: the execution ends only if the line was delivered while
// the code was still running. (The interpreter runs on the test's host, so it sees the file.)
func testRunCodeStreams(t *testing.T, sb *kubox.Sandbox) {
	gate := filepath.Join(t.TempDir(), "go")
	var mu sync.Mutex
	var lines, errLines []string
	code := "import os, sys, time\nprint('first', flush=True)\nprint('oops', file=sys.stderr, flush=True)\n" +
		"while not os.path.exists(" + pyQuote(gate) + "):\n    time.sleep(0.01)\nprint('second', flush=True)\n"
	exec, err := sb.RunCode(t.Context(), code, &kubox.RunCodeOptions{
		// Without streaming the code waits forever: the timeout ends it with an error.
		Timeout: readyTimeout,
		OnStdout: func(line string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, line)
			// Output comes in the pieces the interpreter wrote ("first", "\n" or both).
			if strings.Join(lines, "") == "first\n" {
				_ = os.WriteFile(gate, nil, 0o600)
			}
		},
		OnStderr: func(line string) { mu.Lock(); errLines = append(errLines, line); mu.Unlock() },
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		t.Fatalf("RunCode(print, wait, print): %v (stdout callbacks %q, stderr %q)", err, lines, errLines)
	}
	if got := strings.Join(lines, ""); got != "first\nsecond\n" {
		t.Errorf("OnStdout got %q; want first and second, in order", lines)
	}
	if got := strings.Join(errLines, ""); got != "oops\n" {
		t.Errorf("OnStderr got %q; want oops", errLines)
	}
	if diff := cmp.Diff(lines, exec.Logs.Stdout); diff != "" {
		t.Errorf("Execution.Logs.Stdout is not what OnStdout got (-callback +logs):\n%s", diff)
	}
	if diff := cmp.Diff(errLines, exec.Logs.Stderr); diff != "" {
		t.Errorf("Execution.Logs.Stderr is not what OnStderr got (-callback +logs):\n%s", diff)
	}
}

func testCodeContexts(t *testing.T, sb *kubox.Sandbox) {
	ctx := t.Context()
	// The agent's file root is a directory of the test's host, where its interpreters run: a
	// context's cwd is the host path of what the sandbox calls /work.
	if err := sb.Files().MakeDir(ctx, "/work"); err != nil {
		t.Fatalf("MakeDir /work: %v", err)
	}
	other, err := sb.CreateCodeContext(ctx, &kubox.CodeContextOptions{Language: kubox.LanguagePython, Cwd: "/work"})
	if err != nil {
		t.Fatalf("CreateCodeContext: %v", err)
	}
	dir := other.Cwd
	if other.ID == "" || other.Language != kubox.LanguagePython || !strings.HasSuffix(dir, "/work") {
		t.Errorf("CreateCodeContext = %+v; want an ID, python and the cwd /work", other)
	}
	exec, err := sb.RunCode(ctx, "x", &kubox.RunCodeOptions{Context: other})
	if err != nil {
		t.Fatalf("RunCode(x) in a second context: %v", err)
	}
	if exec.Error == nil || exec.Error.Name != "NameError" {
		t.Errorf("x in a second context: %+v, error %+v; want NameError (x is the default context's)", exec.Results, exec.Error)
	}
	exec, err = sb.RunCode(ctx, "import os\ny = 7\nos.getcwd()", &kubox.RunCodeOptions{Context: other})
	if err != nil || len(exec.Results) != 1 || exec.Results[0].Text != dir {
		t.Errorf("os.getcwd() in the context created in %s = %+v, %v", dir, exec, err)
	}
	list, err := sb.ListCodeContexts(ctx)
	if err != nil {
		t.Fatalf("ListCodeContexts: %v", err)
	}
	if !containsContext(list, other.ID) {
		t.Errorf("ListCodeContexts = %+v; want %s among them", list, other.ID)
	}

	if err := sb.RestartCodeContext(ctx, other); err != nil {
		t.Fatalf("RestartCodeContext: %v", err)
	}
	if exec, err := sb.RunCode(ctx, "y", &kubox.RunCodeOptions{Context: other}); err != nil || exec.Error == nil || exec.Error.Name != "NameError" {
		t.Errorf("y after RestartCodeContext = %+v, %v; want NameError (a new interpreter)", exec, err)
	}
	if exec, err := sb.RunCode(ctx, "x", nil); err != nil || len(exec.Results) != 1 || exec.Results[0].Text != "41" {
		t.Errorf("x in the default context after another's restart = %+v, %v; want 41", exec, err)
	}

	if err := sb.RemoveCodeContext(ctx, other); err != nil {
		t.Fatalf("RemoveCodeContext: %v", err)
	}
	if _, err := sb.RunCode(ctx, "1", &kubox.RunCodeOptions{Context: other}); !errors.Is(err, kubox.ErrNotFound) ||
		!strings.Contains(err.Error(), other.ID) {
		t.Errorf("RunCode in a removed context: %v; want ErrNotFound naming %s", err, other.ID)
	}
	if list, err := sb.ListCodeContexts(ctx); err != nil || containsContext(list, other.ID) {
		t.Errorf("ListCodeContexts after RemoveCodeContext = %+v, %v; want %s gone", list, err, other.ID)
	}
}

func containsContext(list []kubox.CodeContext, id string) bool {
	for _, c := range list {
		if c.ID == id {
			return true
		}
	}
	return false
}

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
