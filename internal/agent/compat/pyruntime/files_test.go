package pyruntime

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	wantDenied   = response{403, `{"message":"Access denied"}`, jsonType}
	wantNotFound = response{404, `{"message":"File not found"}`, jsonType}
	wantNotADir  = response{404, `{"message":"Path is not a directory"}`, jsonType}
)

func TestDownload(t *testing.T) {
	fx := newFixture(t)
	if err := os.WriteFile(filepath.Join(fx.base, "a b.txt"), []byte("spaced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fx.base, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := fx.handler(t, &fakeRunner{}, Options{})
	octets := func(disposition string) map[string]string {
		return map[string]string{"Content-Type": "application/octet-stream", "Content-Disposition": disposition}
	}
	cases := map[string]struct {
		path string
		want response
	}{
		"file":                 {"file.txt", response{200, "hello\n", octets(`attachment; filename="file.txt"`)}},
		"nested":               {"sub/inner.txt", response{200, "inner", octets(`attachment; filename="sub/inner.txt"`)}},
		"leading slash":        {"/file.txt", response{200, "hello\n", octets(`attachment; filename="/file.txt"`)}},
		"many leading slashes": {"///sub/inner.txt", response{200, "inner", octets(`attachment; filename="///sub/inner.txt"`)}},
		"name to encode":       {"a b.txt", response{200, "spaced", octets(`attachment; filename*=utf-8''a%20b.txt`)}},
		"link inside":          {"sublink/inner.txt", response{200, "inner", nil}},
		"dot segments inside":  {"sub/../file.txt", response{200, "hello\n", nil}},
		"missing":              {"nope.txt", wantNotFound},
		"directory":            {"sub", wantNotFound},
		"base directory":       {"", wantNotFound},
		"fifo":                 {"fifo", wantNotFound},
		"dangling link":        {"dangling", wantNotFound},
		"parent":               {"../outside/secret.txt", wantDenied},
		"parent after a dir":   {"sub/../../outside/secret.txt", wantDenied},
		"through a link out":   {"link/secret.txt", wantDenied},
		"link out itself":      {"link", wantDenied},
		"NUL":                  {"file.txt\x00", wantDenied},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkResponse(t, get(h, "/download/"+tc.path), tc.want)
		})
	}
}

func TestDownloadRange(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{})
	r := httptest.NewRequest(http.MethodGet, "/download/file.txt", nil)
	r.Header.Set("Range", "bytes=1-3")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	checkResponse(t, w, response{206, "ell", map[string]string{"Content-Range": "bytes 1-3/6"}})
}

func TestList(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{})
	st, err := os.Stat(filepath.Join(fx.base, "sub", "deeper"))
	if err != nil {
		t.Fatal(err)
	}
	sub := fmt.Sprintf(`[{"name":"deeper","size":%d,"type":"directory","mod_time":1712345678.5},`+
		`{"name":"inner.txt","size":5,"type":"file","mod_time":1712345678.5}]`, st.Size())
	cases := map[string]struct {
		path string
		want response
	}{
		"directory":           {"sub", response{200, sub, jsonType}},
		"trailing slash":      {"sub/", response{200, sub, jsonType}},
		"leading slash":       {"/sub", response{200, sub, jsonType}},
		"link inside":         {"sublink", response{200, sub, jsonType}},
		"empty directory":     {"sub/deeper", response{200, `[]`, jsonType}},
		"file":                {"file.txt", wantNotADir},
		"missing":             {"nope", wantNotADir},
		"parent":              {"..", wantDenied},
		"encoded dot segment": {"sub/../..", wantDenied},
		"link out":            {"link", wantDenied},
		"link out, slash":     {"link/", wantDenied},
		"NUL":                 {"sub\x00", wantDenied},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkResponse(t, get(h, "/list/"+tc.path), tc.want)
		})
	}
}

func TestListBaseDirectory(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{})
	w := get(h, "/list/")
	if w.Code != 200 {
		t.Fatalf("status %d, want 200", w.Code)
	}
	var entries []ListEntry
	decodeStrict(t, w.Body.Bytes(), &entries)
	got := map[string]string{}
	for _, e := range entries {
		got[e.Name] = e.Type
	}
	// Links count as what they point to; a dangling one as a file, as python-runtime lists it.
	want := map[string]string{"file.txt": "file", "sub": "directory", "sublink": "directory",
		"link": "directory", "dangling": "file"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestExists(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{})
	cases := map[string]struct {
		path string
		want response
	}{
		"file":           {"file.txt", response{200, `{"path":"file.txt","exists":true}`, jsonType}},
		"directory":      {"sub", response{200, `{"path":"sub","exists":true}`, jsonType}},
		"base directory": {"", response{200, `{"path":"","exists":true}`, jsonType}},
		"missing":        {"nope.txt", response{200, `{"path":"nope.txt","exists":false}`, jsonType}},
		"leading slash":  {"/file.txt", response{200, `{"path":"/file.txt","exists":true}`, jsonType}},
		"dangling link":  {"dangling", response{200, `{"path":"dangling","exists":false}`, jsonType}},
		"link inside":    {"sublink/inner.txt", response{200, `{"path":"sublink/inner.txt","exists":true}`, jsonType}},
		"parent":         {"../outside/secret.txt", wantDenied},
		"link out":       {"link/secret.txt", wantDenied},
		"NUL":            {"a\x00", wantDenied},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkResponse(t, get(h, "/exists/"+tc.path), tc.want)
		})
	}
}

func TestUpload(t *testing.T) {
	const missing = `{"detail":[{"type":"missing","loc":["body","file"],"msg":"Field required","input":null}]}`
	cases := map[string]struct {
		filename string
		content  string
		wantFile string // path under base that must then hold content; "" for none
		want     response
	}{
		"file":                {"new.txt", "data", "new.txt", response{200, `{"message":"File 'new.txt' uploaded successfully."}`, jsonType}},
		"creates directories": {"a/b/c.txt", "deep", "a/b/c.txt", response{200, `{"message":"File 'a/b/c.txt' uploaded successfully."}`, jsonType}},
		"leading slash":       {"/abs.txt", "x", "abs.txt", response{200, `{"message":"File '/abs.txt' uploaded successfully."}`, jsonType}},
		"replaces":            {"file.txt", "replaced", "file.txt", response{200, `{"message":"File 'file.txt' uploaded successfully."}`, jsonType}},
		"through a link in":   {"sublink/up.txt", "x", "sub/up.txt", response{200, `{"message":"File 'sublink/up.txt' uploaded successfully."}`, jsonType}},
		"quote in the name":   {`it's "q".txt`, "q", `it's "q".txt`, response{200, `{"message":"File 'it's \"q\".txt' uploaded successfully."}`, jsonType}},
		"empty file":          {"empty.txt", "", "empty.txt", response{200, `{"message":"File 'empty.txt' uploaded successfully."}`, jsonType}},
		"parent":              {"../evil.txt", "x", "", wantDenied},
		"deep parent":         {"a/../../outside/secret.txt", "x", "", wantDenied},
		"through a link out":  {"link/secret.txt", "x", "", wantDenied},
		"new file via link":   {"link/new.txt", "x", "", wantDenied},
		// Go's multipart reader refuses a NUL in a part's header before the name is looked at.
		"NUL": {"a\x00b", "x", "", response{400, `{"detail":"There was an error parsing the body"}`, jsonType}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fx := newFixture(t)
			h := fx.handler(t, &fakeRunner{}, Options{})
			ct, body := multipartBody(tc.filename, tc.content)
			checkResponse(t, post(h, "/upload", ct, body), tc.want)
			fx.outsideIntact(t)
			if tc.wantFile == "" {
				return
			}
			p := filepath.Join(fx.base, tc.wantFile)
			b, err := os.ReadFile(p)
			if err != nil || string(b) != tc.content {
				t.Errorf("%s holds %q, %v; want %q", tc.wantFile, b, err, tc.content)
			}
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
				t.Errorf("%s mode %v, %v; want 0644", tc.wantFile, st.Mode(), err)
			}
			noTempFiles(t, filepath.Dir(p))
		})
	}

	t.Run("not multipart", func(t *testing.T) {
		fx := newFixture(t)
		h := fx.handler(t, &fakeRunner{}, Options{})
		checkResponse(t, post(h, "/upload", "application/json", strings.NewReader(`{}`)), response{422, missing, jsonType})
	})
	t.Run("no file field", func(t *testing.T) {
		fx := newFixture(t)
		h := fx.handler(t, &fakeRunner{}, Options{})
		var buf bytes.Buffer
		ct, _ := multipartBody("", "")
		boundary := strings.TrimPrefix(ct, "multipart/form-data; boundary=")
		fmt.Fprintf(&buf, "--%s\r\nContent-Disposition: form-data; name=\"other\"; filename=\"x\"\r\n\r\ndata\r\n"+
			"--%s\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nnot a file\r\n--%s--\r\n", boundary, boundary, boundary)
		checkResponse(t, post(h, "/upload", ct, &buf), response{422, missing, jsonType})
	})
	t.Run("malformed multipart", func(t *testing.T) {
		fx := newFixture(t)
		h := fx.handler(t, &fakeRunner{}, Options{})
		checkResponse(t, post(h, "/upload", "multipart/form-data; boundary=xyz", strings.NewReader("--xyz\r\ngarbage")),
			response{400, `{"detail":"There was an error parsing the body"}`, jsonType})
	})
	t.Run("onto a directory", func(t *testing.T) {
		fx := newFixture(t)
		h := fx.handler(t, &fakeRunner{}, Options{})
		ct, body := multipartBody("sub", "x")
		w := post(h, "/upload", ct, body)
		want := `{"message":"File upload failed: ` + filepath.Join(fx.resolver.root, "sub") + ` is a directory"}`
		checkResponse(t, w, response{500, want, jsonType})
	})
	t.Run("empty name is the base directory", func(t *testing.T) {
		fx := newFixture(t)
		h := fx.handler(t, &fakeRunner{}, Options{})
		ct, body := multipartBody("", "x")
		want := `{"message":"File upload failed: ` + fx.resolver.root + ` is a directory"}`
		checkResponse(t, post(h, "/upload", ct, body), response{500, want, jsonType})
	})
	t.Run("keeps the mode of a replaced file", func(t *testing.T) {
		fx := newFixture(t)
		p := filepath.Join(fx.base, "file.txt")
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		h := fx.handler(t, &fakeRunner{}, Options{})
		ct, body := multipartBody("file.txt", "new")
		if w := post(h, "/upload", ct, body); w.Code != 200 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, %v; want 0600 kept", st.Mode(), err)
		}
	})
	t.Run("over the limit leaves the old file", func(t *testing.T) {
		fx := newFixture(t)
		h := fx.handler(t, &fakeRunner{}, Options{MaxUploadBytes: 300, UploadLimitSetting: "--the-setting"})
		ct, body := multipartBody("file.txt", strings.Repeat("x", 1000))
		checkResponse(t, post(h, "/upload", ct, body), response{413, `{"message":"File upload failed: the upload is ` +
			`larger than the limit of 300 bytes; raise --the-setting, or upload the file in parts"}`, jsonType})
		if b, _ := os.ReadFile(filepath.Join(fx.base, "file.txt")); string(b) != "hello\n" {
			t.Errorf("file.txt now holds %q, want it unchanged", b)
		}
		noTempFiles(t, fx.base)
	})
}

// TestUploadStreams sends a chunked upload of 300 MiB, more than the 256 MiB kubox-agent once
// refused and more than any buffer the handler could keep, through a real server the way
// agent-sandbox's Go client's WriteReader does. With no limit configured (the default) it is
// accepted, arrives byte for byte (SHA-256), and everything the process allocates meanwhile
// (client, server and handler together) stays under a sixteenth of its size: it streams to disk.
func TestUploadStreams(t *testing.T) {
	fx := newFixture(t)
	h := fx.handler(t, &fakeRunner{}, Options{})
	srv := httptest.NewServer(h)
	defer srv.Close()

	const size = 300 << 20
	ct, framing := multipartBody("big.bin", "@content@")
	// Stream the content in place of the placeholder.
	before, after, _ := strings.Cut(framing.String(), "@content@")
	sent := sha256.New()
	body := io.MultiReader(strings.NewReader(before), io.TeeReader(io.LimitReader(&counting{}, size), sent), strings.NewReader(after))
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/upload", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	start := allocated()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	alloc := allocated() - start
	if resp.StatusCode != 200 || string(got) != `{"message":"File 'big.bin' uploaded successfully."}` {
		t.Fatalf("answer %d %s", resp.StatusCode, got)
	}
	f, err := os.Open(filepath.Join(fx.base, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	written := sha256.New()
	if n, err := io.Copy(written, f); err != nil || n != size {
		t.Fatalf("big.bin has %d bytes (%v); want %d", n, err, size)
	}
	if !bytes.Equal(written.Sum(nil), sent.Sum(nil)) {
		t.Error("big.bin differs from what was uploaded")
	}
	t.Logf("allocated during a %d MiB upload: %.1f MiB", size>>20, float64(alloc)/(1<<20))
	if alloc > size/16 {
		t.Errorf("the upload allocated %.1f MiB for a %d MiB file: it is buffering the file", float64(alloc)/(1<<20), size>>20)
	}
	srv.CloseClientConnections()
}

// counting yields the bytes 0, 1, ..., 250, 0, 1, ...: a misplaced or repeated block changes
// the hash of what it yields.
type counting struct{ n int }

func (c *counting) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c.n % 251)
		c.n++
	}
	return len(p), nil
}

// allocated returns the bytes the whole process allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, ".upload-*"))
	if err != nil || len(matches) > 0 {
		t.Errorf("temporary files left behind: %q, %v", matches, err)
	}
}
