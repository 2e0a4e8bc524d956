package codeinterp_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/internal/testutil/agenttest"
)

// startSandboxWithPath is startSandbox with PATH only bin, a directory the test fills with the
// interpreters the image is to have.
func startSandboxWithPath(t *testing.T, bin string) *sandbox {
	t.Helper()
	a := agenttest.Start(t, testToken, 2, func(c *agent.Config) {
		c.CodeInterpreterPort = agenttest.FreePort(t)
		c.Process = process.Options{Env: []string{"PATH=" + bin, "HOME=" + c.Root, "LANG=C.UTF-8"}}
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &sandbox{url: a.URL(1), root: a.Root, http: &http.Client{Transport: tr}}
}

// TestMissingInterpreterFailsClearly: an image without node (or python3, or bash) refuses a
// context of that language at its creation, naming the language, the program looked for and
// the fix, and an execution in that language (a default context, or a context whose interpreter
// was removed after its creation) ends with an error saying the same, never silently; the
// languages the image has keep working.
func TestMissingInterpreterFailsClearly(t *testing.T) {
	bin := t.TempDir()
	if err := os.Symlink("/bin/bash", filepath.Join(bin, "bash")); err != nil {
		t.Fatal(err)
	}
	s := startSandboxWithPath(t, bin)
	for lang, program := range map[string]string{"javascript": "node", "js": "node", "python": "python3", "": "python3"} {
		want := []string{`"` + program + `"`, bin, "image"}
		t.Run("create "+lang, func(t *testing.T) {
			code, body := s.status(t, http.MethodPost, "/contexts", codeinterp.CreateContextRequest{Language: lang})
			if code != http.StatusBadRequest {
				t.Fatalf("POST /contexts %q without %s: %d %s; want 400", lang, program, code, body)
			}
			for _, w := range append(want, "language") {
				if !strings.Contains(body, w) {
					t.Errorf("POST /contexts %q: %q does not say %q", lang, body, w)
				}
			}
		})
		t.Run("execute "+lang, func(t *testing.T) {
			e := s.run(t, codeinterp.ExecuteRequest{Code: "1", Language: lang})
			if e.Error == nil || *e.Error.Name != "InterpreterNotFound" {
				t.Fatalf("an execution in %q without %s: %+v; want the error InterpreterNotFound", lang, program, e)
			}
			for _, w := range want {
				if !strings.Contains(*e.Error.Value, w) {
					t.Errorf("the error %q does not say %q", *e.Error.Value, w)
				}
			}
		})
	}

	// bash is there: its context works, until the image loses it.
	c := s.createContext(t, codeinterp.CreateContextRequest{Language: "bash"})
	if e := s.run(t, codeinterp.ExecuteRequest{Code: "echo hi", ContextID: c.ID}); e.Error != nil || e.Stdout != "hi\n" {
		t.Fatalf("bash, which the image has: %+v", e)
	}
	if code, body := s.status(t, http.MethodPost, "/contexts/"+c.ID+"/restart", nil); code != http.StatusOK {
		t.Fatalf("restart: %d %s", code, body)
	}
	if err := os.Remove(filepath.Join(bin, "bash")); err != nil {
		t.Fatal(err)
	}
	e := s.run(t, codeinterp.ExecuteRequest{Code: "echo hi", ContextID: c.ID})
	if e.Error == nil || *e.Error.Name != "InterpreterNotFound" || !strings.Contains(*e.Error.Value, `"bash"`) {
		t.Fatalf("bash context after bash was removed: %+v; want the error InterpreterNotFound naming bash", e)
	}
}
