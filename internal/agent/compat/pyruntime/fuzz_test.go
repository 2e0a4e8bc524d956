package pyruntime

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubox-dev/kubox/internal/agent/compat/shlex"
)

// FuzzExecuteRequest posts arbitrary bodies to /execute: the handler never panics, always answers
// JSON of exactly the shape {"stdout": str, "stderr": str, "exit_code": int}, runs a command only
// for a body {"command": str} whose split is not empty, and runs exactly that split.
func FuzzExecuteRequest(f *testing.F) {
	for _, seed := range []string{
		`{"command":"echo hello"}`, `{"command":"python3 -c \"print('a b')\""}`, `{"command":"echo 'x"}`,
		`{"command":""}`, `{"command":5}`, `{"command":null}`, `{"Command":"ls"}`, `{"command":"a","command":"b"}`,
		`{"command":"ls"} trailing`, `[]`, `null`, `"ls"`, ``, `{`, `{"command":"\u0000\\"}`,
		`{"command":"` + string(bytes.Repeat([]byte("x"), 600)) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	fx := newFixture(f)
	const limit = 512
	f.Fuzz(func(t *testing.T, body []byte) {
		runner := &fakeRunner{stdout: "out"}
		h := fx.handler(t, runner, Options{MaxJSONBytes: limit})
		w := post(h, "/execute", "application/json", bytes.NewReader(body))

		tooLarge := w.Code == http.StatusRequestEntityTooLarge && len(body) > limit
		if w.Code != http.StatusOK && !tooLarge {
			t.Fatalf("status %d for a body of %d bytes", w.Code, len(body))
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
		var shape map[string]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &shape); err != nil {
			t.Fatalf("answer %q is not a JSON object: %v", w.Body, err)
		}
		var got struct {
			Stdout   *string `json:"stdout"`
			Stderr   *string `json:"stderr"`
			ExitCode *int    `json:"exit_code"`
		}
		decodeStrict(t, w.Body.Bytes(), &got)
		if len(shape) != 3 || got.Stdout == nil || got.Stderr == nil || got.ExitCode == nil {
			t.Fatalf("answer %s does not have exactly stdout, stderr and exit_code", w.Body)
		}

		calls := runner.Calls()
		if len(calls) == 0 {
			if *got.ExitCode != 1 || *got.Stdout != "" || !bytes.HasPrefix([]byte(*got.Stderr), []byte("Failed to execute command: ")) {
				t.Fatalf("no command ran, yet the answer is %s", w.Body)
			}
			return
		}
		if len(calls) > 1 {
			t.Fatalf("%d commands ran for one request", len(calls))
		}
		if w.Body.String() != `{"stdout":"out","stderr":"","exit_code":0}` {
			t.Fatalf("the command ran but the answer is %s", w.Body)
		}
		var req map[string]json.RawMessage
		var command string
		if err := json.Unmarshal(body, &req); err != nil || json.Unmarshal(req["command"], &command) != nil {
			t.Fatalf("a command ran for the body %q, which has no string command", body)
		}
		want, err := shlex.Split(command)
		if err != nil || len(want) == 0 {
			t.Fatalf("a command ran for %q, which does not split into words (%v)", command, err)
		}
		if diff := cmp.Diff(want, calls[0].Argv); diff != "" {
			t.Fatalf("argv for %q (-want +got):\n%s", command, diff)
		}
	})
}

// FuzzPaths sends arbitrary path names to /download, /list, /exists and /upload of a real base
// directory whose neighbour holds a secret, reached by "..", an absolute path, or the base's link
// to it. Nothing outside the base directory may be read, listed or written, whatever the name.
func FuzzPaths(f *testing.F) {
	for _, seed := range []string{
		"file.txt", "sub/inner.txt", "", ".", "..", "/", "/etc/passwd", "../outside/secret.txt",
		"sub/../../outside/secret.txt", "link", "link/", "link/secret.txt", "link/../outside/secret.txt",
		"sublink/../../outside/secret.txt", "sublink/inner.txt", "dangling", "a/b/c.txt", "sub/./inner.txt",
		"//../outside", "%2e%2e/outside", "sub\x00/../..", "new/../../outside/x", "link/new.txt", "\xd5", "\xee\xca", "\n\n",
	} {
		f.Add(seed)
	}
	fx := newFixture(f)
	h := fx.handler(f, &fakeRunner{}, Options{MaxUploadBytes: 1 << 16})
	parent := filepath.Dir(fx.base)
	f.Fuzz(func(t *testing.T, name string) {
		if w := get(h, "/download/"+name); w.Code == http.StatusOK {
			if bytes.Contains(w.Body.Bytes(), []byte(secret)) {
				t.Fatalf("download %q served the outside secret", name)
			}
		} else if w.Code != http.StatusForbidden && w.Code != http.StatusNotFound {
			t.Fatalf("download %q: status %d", name, w.Code)
		}

		if w := get(h, "/list/"+name); w.Code == http.StatusOK {
			var entries []ListEntry
			decodeStrict(t, w.Body.Bytes(), &entries)
			for _, e := range entries {
				// Entries only outside directories have must be in some directory of the base too.
				if (e.Name == "secret.txt" || e.Name == "outside" || e.Name == "base") && !inBase(t, fx.base, e.Name) {
					t.Fatalf("list %q shows %q, which only the outside has", name, e.Name)
				}
			}
		} else if w.Code != http.StatusForbidden && w.Code != http.StatusNotFound {
			t.Fatalf("list %q: status %d", name, w.Code)
		}

		if w := get(h, "/exists/"+name); w.Code == http.StatusOK {
			var got ExistsResponse
			decodeStrict(t, w.Body.Bytes(), &got)
			// JSON carries text: bytes that are not UTF-8 come back as U+FFFD.
			var want string
			_ = json.Unmarshal([]byte(jsonString(name)), &want)
			if got.Path != want {
				t.Fatalf("exists %q answered for the path %q", name, got.Path)
			}
		} else if w.Code != http.StatusForbidden {
			t.Fatalf("exists %q: status %d", name, w.Code)
		}

		// A name with CR or LF breaks the part's header: 400, or 422 when no "file" part remains.
		ct, body := multipartBody(name, "fuzz upload")
		switch w := post(h, "/upload", ct, body); w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusForbidden,
			http.StatusInternalServerError:
		default:
			t.Fatalf("upload %q: status %d (%s)", name, w.Code, w.Body)
		}
		fx.outsideIntact(t)
		if entries, err := os.ReadDir(parent); err != nil || len(entries) != 2 {
			t.Fatalf("upload %q: the base's parent now holds %v (%v)", name, entries, err)
		}
	})
}

// inBase reports whether a directory under base has an entry called name.
func inBase(t *testing.T, base, name string) bool {
	found := false
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != base && d.Name() == name {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
