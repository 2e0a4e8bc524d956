package pyruntime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// dirResolver confines paths to root the way python-runtime's realpath + commonpath check does:
// symbolic links in the existing part of the path are followed, and the result must lie in root.
type dirResolver struct {
	root string // with its own symbolic links resolved
}

func newDirResolver(t testing.TB, root string) dirResolver {
	t.Helper()
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	return dirResolver{root: real}
}

var errOutside = errors.New("outside the base directory")

func (d dirResolver) Resolve(p string) (string, error) {
	if filepath.IsAbs(p) {
		return "", errOutside
	}
	joined := filepath.Join(d.root, p)
	// Follow links in the longest prefix that exists; the rest does not exist yet.
	existing, rest := joined, ""
	var real string
	for {
		r, err := filepath.EvalSymlinks(existing)
		if err == nil {
			real = r
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", err
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real = filepath.Join(real, rest)
	if real != d.root && !strings.HasPrefix(real, d.root+string(filepath.Separator)) {
		return "", errOutside
	}
	return real, nil
}

// execRunner runs commands with os/exec, for tests only: in kubox-agent the process manager
// runs them, as the only waiter on the agent's children.
type execRunner struct{}

func (execRunner) Run(ctx context.Context, argv []string, dir string, timeout time.Duration, maxOutput int64) ([]byte, []byte, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, nil, 0, fmt.Errorf("killed after %s: %w", timeout, ErrTimeout)
	}
	for name, b := range map[string]*bytes.Buffer{"stdout": &stdout, "stderr": &stderr} {
		if maxOutput > 0 && int64(b.Len()) > maxOutput {
			return nil, nil, 0, &OutputLimitError{Stream: name, Limit: maxOutput}
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return stdout.Bytes(), stderr.Bytes(), -int(ws.Signal()), nil
		}
		return stdout.Bytes(), stderr.Bytes(), exit.ExitCode(), nil
	}
	if err != nil {
		return nil, nil, 0, err
	}
	return stdout.Bytes(), stderr.Bytes(), 0, nil
}

// fakeRunner records what it is asked to run and answers with canned results.
type fakeRunner struct {
	mu      sync.Mutex
	calls   []runCall
	stdout  string
	stderr  string
	code    int
	err     error
	running chan struct{} // when set, Run blocks until ctx ends and reports it there
}

type runCall struct {
	Argv      []string
	Dir       string
	Timeout   time.Duration
	MaxOutput int64
}

func (f *fakeRunner) Run(ctx context.Context, argv []string, dir string, timeout time.Duration, maxOutput int64) ([]byte, []byte, int, error) {
	f.mu.Lock()
	f.calls = append(f.calls, runCall{append([]string(nil), argv...), dir, timeout, maxOutput})
	f.mu.Unlock()
	if f.running != nil {
		close(f.running)
		<-ctx.Done()
		return nil, nil, 0, ctx.Err()
	}
	return []byte(f.stdout), []byte(f.stderr), f.code, f.err
}

func (f *fakeRunner) Calls() []runCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]runCall(nil), f.calls...)
}

// fixture is a base directory next to an outside directory that nothing may reach:
//
//	base/file.txt        "hello\n"
//	base/sub/inner.txt   "inner"
//	base/sub/deeper/     (empty)
//	base/link ->         ../outside       (leaves the base directory)
//	base/sublink ->      sub              (stays inside)
//	base/dangling ->     ../outside/none
//	outside/secret.txt   secret
type fixture struct {
	base, outside string
	resolver      dirResolver
}

const secret = "outside secret 8c1f3d7e"

// fixedTime is the modification time of every fixture entry, so listings compare exactly.
var fixedTime = time.Unix(1712345678, 500000000)

func newFixture(t testing.TB) fixture {
	t.Helper()
	dir := t.TempDir()
	fx := fixture{base: filepath.Join(dir, "base"), outside: filepath.Join(dir, "outside")}
	for _, d := range []string{fx.base, fx.outside, filepath.Join(fx.base, "sub", "deeper")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{
		filepath.Join(fx.base, "file.txt"):         "hello\n",
		filepath.Join(fx.base, "sub", "inner.txt"): "inner",
		filepath.Join(fx.outside, "secret.txt"):    secret,
	} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link": "../outside", "sublink": "sub", "dangling": "../outside/none"} {
		if err := os.Symlink(target, filepath.Join(fx.base, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"file.txt", "sub/inner.txt", "sub/deeper", "sub"} {
		if err := os.Chtimes(filepath.Join(fx.base, p), fixedTime, fixedTime); err != nil {
			t.Fatal(err)
		}
	}
	fx.resolver = newDirResolver(t, fx.base)
	return fx
}

func (fx fixture) handler(t testing.TB, runner Runner, opts Options) *Handler {
	t.Helper()
	opts.BaseDir = fx.base
	opts.Resolver = fx.resolver
	opts.Runner = runner
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// outsideIntact fails t when anything under the outside directory changed.
func (fx fixture) outsideIntact(t testing.TB) {
	t.Helper()
	entries, err := os.ReadDir(fx.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "secret.txt" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the outside directory now holds %q", names)
	}
	b, err := os.ReadFile(filepath.Join(fx.outside, "secret.txt"))
	if err != nil || string(b) != secret {
		t.Fatalf("the outside secret now reads %q, %v", b, err)
	}
}

// get sends a GET for path, given unescaped as a server would decode it.
func get(h http.Handler, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.URL.Path, r.URL.RawPath = path, ""
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func post(h http.Handler, path, contentType string, body io.Reader) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, body)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// multipartBody returns a form with the field "file" carrying filename (its Content-Disposition
// written by hand, so any name can be sent) and content, after an unrelated field.
func multipartBody(filename, content string) (string, *bytes.Buffer) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("note", "ignored")
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", `form-data; name="file"; filename="`+
		strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(filename)+`"`)
	hdr.Set("Content-Type", "application/octet-stream")
	part, _ := mw.CreatePart(hdr)
	_, _ = io.WriteString(part, content)
	_ = mw.Close()
	return mw.FormDataContentType(), &buf
}

// jsonString encodes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// decodeStrict decodes b into v, failing on unknown members.
func decodeStrict(t testing.TB, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s into %T: %v", b, v, err)
	}
}
