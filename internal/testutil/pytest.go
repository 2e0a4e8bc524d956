package testutil

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
)

// Python is the interpreter that runs the Python SDK's tests: Debian's, where `make python-deps`
// installs pytest and the SDK's dependencies (the python3 first on PATH may be another one).
const Python = "/usr/bin/python3"

// RequirePytest fails the test when Python cannot import pytest and the SDK's dependencies,
// saying how to install them.
func RequirePytest(t testing.TB) {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import pytest, pytest_asyncio, httpx, kubernetes, google.protobuf").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import pytest and the SDK's dependencies (%v): %s\nrun `make python-deps` to install them",
			Python, err, strings.TrimSpace(string(out)))
	}
}

// RunPytest runs pytest on dir (relative to the repository's root, root) with the SDK's sources
// on PYTHONPATH, this process's environment without KUBOX_ROUTER_URL, and env on top; its output
// goes to the test's log line by line as it comes. It fails the test when pytest fails.
// PYTEST_ADDOPTS passes through (`-k name` selects tests).
func RunPytest(t *testing.T, root, dir string, env ...string) {
	t.Helper()
	RequirePytest(t)
	cmd := exec.CommandContext(t.Context(), Python, "-m", "pytest", "-q", "-p", "no:cacheprovider", dir)
	cmd.Dir = root
	cmd.Env = append(environWithout(contract.RouterURLEnv),
		"PYTHONPATH="+filepath.Join(root, "sdk", "python", "src"),
		"PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, env...)
	out := &lineLog{t: t}
	cmd.Stdout, cmd.Stderr = out, out
	// A process pytest leaves behind holding the output open does not keep Wait forever.
	cmd.WaitDelay = 10 * time.Second
	t.Logf("Running %s in %s", strings.Join(cmd.Args, " "), root)
	err := cmd.Run()
	out.flush()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("pytest %s failed with exit code %d (its output is above)", dir, exit.ExitCode())
	case err != nil:
		t.Fatalf("Running pytest: %v", err)
	}
}

// environWithout is this process's environment without the variable name.
func environWithout(name string) []string {
	var kept []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, name+"=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// lineLog sends what is written to it to the test's log, one line at a time. os/exec writes a
// command's stdout and stderr from one goroutine when both are the same lineLog.
type lineLog struct {
	t       testing.TB
	partial bytes.Buffer
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.partial.Write(b)
	for {
		line, err := l.partial.ReadString('\n')
		if err != nil { // no newline: keep the start of the line for the next write
			l.partial.Reset()
			l.partial.WriteString(line)
			return len(b), nil
		}
		l.t.Log(strings.TrimRight(line, "\r\n"))
	}
}

// flush logs the last line when it has no newline.
func (l *lineLog) flush() {
	if l.partial.Len() > 0 {
		l.t.Log(l.partial.String())
		l.partial.Reset()
	}
}
