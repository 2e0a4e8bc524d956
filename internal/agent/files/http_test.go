package files

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve starts h on a 127.0.0.1 port for the test.
func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", srv.URL)
	}
	return srv
}

// do sends a request and returns the response with its body read.
func do(t testing.TB, method, url string, body io.Reader, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// errorBody decodes a JSON error and checks it names the path.
func errorBody(t testing.TB, resp *http.Response, body string) apiError {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q, want application/json", ct)
	}
	var e apiError
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("error body %q is not {code, message}: %v", body, err)
	}
	return e
}

func TestContentGet(t *testing.T) {
	tr := newTree(t).file("dir/hello.txt", "hello, world").file("a b/%2F.txt", "odd").link("out", "{outside}")
	mtime := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(tr.dir, "dir/hello.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, NewContentHandler(tr.root(), nil))

	resp, body := do(t, "GET", srv.URL+"/files/dir/hello.txt", nil)
	if resp.StatusCode != 200 || body != "hello, world" {
		t.Fatalf("GET = %d %q", resp.StatusCode, body)
	}
	for k, want := range map[string]string{
		"Content-Type":   "application/octet-stream",
		"Content-Length": "12",
		"Last-Modified":  "Wed, 04 Mar 2026 05:06:07 GMT",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}

	resp, body = do(t, "GET", srv.URL+"/files/dir/hello.txt", nil, "Range", "bytes=7-")
	if resp.StatusCode != http.StatusPartialContent || body != "world" || resp.Header.Get("Content-Range") != "bytes 7-11/12" {
		t.Errorf("Range GET = %d %q %q; want 206 world", resp.StatusCode, body, resp.Header.Get("Content-Range"))
	}

	resp, body = do(t, "HEAD", srv.URL+"/files/dir/hello.txt", nil)
	if resp.StatusCode != 200 || body != "" || resp.ContentLength != 12 {
		t.Errorf("HEAD = %d %q length %d; want 200, no body, length 12", resp.StatusCode, body, resp.ContentLength)
	}

	resp, _ = do(t, "GET", srv.URL+"/files/dir/hello.txt", nil, "If-Modified-Since", "Wed, 04 Mar 2026 05:06:07 GMT")
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("conditional GET = %d, want 304", resp.StatusCode)
	}

	// %20 and %25 decode to a space and a percent sign; %2F inside a name is a separator.
	resp, body = do(t, "GET", srv.URL+"/files/a%20b/%252F.txt", nil)
	if resp.StatusCode != 200 || body != "odd" {
		t.Errorf("GET of an escaped name = %d %q; want 200 odd", resp.StatusCode, body)
	}
	resp, body = do(t, "GET", srv.URL+"/files/dir%2Fhello.txt", nil)
	if resp.StatusCode != 200 || body != "hello, world" {
		t.Errorf("GET with %%2F = %d %q; want the file", resp.StatusCode, body)
	}

	errCases := map[string]struct {
		path       string
		wantStatus int
		wantCode   string
	}{
		"missing":               {"/files/dir/nope", 404, "not_found"},
		"a directory":           {"/files/dir", 400, "failed_precondition"},
		"dot-dot escaped":       {"/files/%2E%2E/outside/secret", 403, "permission_denied"},
		"dot-dot encoded slash": {"/files/..%2Foutside%2Fsecret", 403, "permission_denied"},
		"through a link":        {"/files/out/secret", 403, "permission_denied"},
		"NUL byte":              {"/files/dir/%00", 400, "invalid_argument"},
		"not under /files/":     {"/other/x", 404, "not_found"},
	}
	for name, tc := range errCases {
		t.Run(name, func(t *testing.T) {
			resp, body := do(t, "GET", srv.URL+tc.path, nil)
			e := errorBody(t, resp, body)
			if resp.StatusCode != tc.wantStatus || e.Code != tc.wantCode {
				t.Errorf("GET %s = %d %+v; want %d %s", tc.path, resp.StatusCode, e, tc.wantStatus, tc.wantCode)
			}
		})
	}
	tr.secretIntact()
}

func TestContentPut(t *testing.T) {
	tr := newTree(t).file("existing", "old").mkdir("dir").link("out", "{outside}")
	if err := os.Chmod(filepath.Join(tr.dir, "existing"), 0o700); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, NewContentHandler(tr.root(), nil))

	resp, body := do(t, "PUT", srv.URL+"/files/new/sub/file.sh?mode=0755", strings.NewReader("#!/bin/sh\n"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT new = %d %s", resp.StatusCode, body)
	}
	var e wireEntry
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	if e.Path != "/new/sub/file.sh" || e.Name != "file.sh" || e.Size != 10 || e.Mode != "0755" || e.Type != "file" {
		t.Errorf("PUT answered %+v", e)
	}
	if _, err := time.Parse(time.RFC3339, e.ModifiedAt); err != nil {
		t.Errorf("modified_at %q is not RFC 3339", e.ModifiedAt)
	}
	if got := tr.read("new/sub/file.sh"); got != "#!/bin/sh\n" {
		t.Errorf("file holds %q", got)
	}

	resp, body = do(t, "PUT", srv.URL+"/files/existing", strings.NewReader("new"))
	if resp.StatusCode != http.StatusOK || tr.read("existing") != "new" || !strings.Contains(body, `"mode":"0700"`) {
		t.Errorf("PUT over a file = %d %s; want 200, the content replaced and the mode kept", resp.StatusCode, body)
	}

	errCases := map[string]struct {
		path       string
		wantStatus int
		wantCode   string
	}{
		"a bad mode":             {"/files/x?mode=999", 400, "invalid_argument"},
		"a mode too long":        {"/files/x?mode=077777", 400, "invalid_argument"},
		"onto a directory":       {"/files/dir", 400, "failed_precondition"},
		"outside":                {"/files/%2E%2E/outside/secret", 403, "permission_denied"},
		"through a link outside": {"/files/out/secret", 403, "permission_denied"},
		"under a file":           {"/files/existing/x", 409, "failed_precondition"},
	}
	for name, tc := range errCases {
		t.Run(name, func(t *testing.T) {
			resp, body := do(t, "PUT", srv.URL+tc.path, strings.NewReader("data"))
			e := errorBody(t, resp, body)
			if resp.StatusCode != tc.wantStatus || e.Code != tc.wantCode {
				t.Errorf("PUT %s = %d %+v; want %d %s", tc.path, resp.StatusCode, e, tc.wantStatus, tc.wantCode)
			}
		})
	}
	assertNoTempFiles(t, tr.dir)
	tr.secretIntact()
}

// TestContentPutTooLarge checks that a body limit set around the handler (the agent's limits
// middleware does this) is a 413, and leaves nothing behind.
func TestContentPutTooLarge(t *testing.T) {
	tr := newTree(t).file("f", "old")
	srv := serve(t, http.MaxBytesHandler(NewContentHandler(tr.root(), nil), 1024))
	req, _ := http.NewRequest("PUT", srv.URL+"/files/f", io.LimitReader(zeros{}, 4096))
	req.ContentLength = -1 // chunked: the limit is found while streaming
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	e := errorBody(t, resp, string(b))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Code != "resource_exhausted" {
		t.Errorf("PUT over the limit = %d %+v; want 413 resource_exhausted", resp.StatusCode, e)
	}
	if tr.read("f") != "old" {
		t.Error("a refused upload changed the file")
	}
	assertNoTempFiles(t, tr.dir)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestContentDelete(t *testing.T) {
	tr := newTree(t).file("f", "x").file("d/in", "x").link("out", "{outside}")
	srv := serve(t, NewContentHandler(tr.root(), nil))
	cases := []struct {
		path       string
		wantStatus int
		wantCode   string
	}{
		{"/files/f", 204, ""},
		{"/files/f", 404, "not_found"},
		{"/files/d", 409, "failed_precondition"},
		{"/files/d?recursive=maybe", 400, "invalid_argument"},
		{"/files/d?recursive=true", 204, ""},
		{"/files/out/secret", 403, "permission_denied"},
		{"/files/out", 204, ""},
	}
	for _, tc := range cases {
		resp, body := do(t, "DELETE", srv.URL+tc.path, nil)
		if resp.StatusCode != tc.wantStatus {
			t.Errorf("DELETE %s = %d %s; want %d", tc.path, resp.StatusCode, body, tc.wantStatus)
			continue
		}
		if tc.wantCode != "" {
			if e := errorBody(t, resp, body); e.Code != tc.wantCode {
				t.Errorf("DELETE %s code %q, want %q", tc.path, e.Code, tc.wantCode)
			}
		}
	}
	if tr.exists("d") || tr.exists("out") {
		t.Error("d or out still exists")
	}
	tr.secretIntact()

	resp, _ := do(t, "POST", srv.URL+"/files/x", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" {
		t.Errorf("POST = %d, Allow %q; want 405 with Allow", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestContentHostRoot checks that without a root the path after /files/ is an absolute path.
func TestContentHostRoot(t *testing.T) {
	tr := newTree(t)
	r, err := NewHostRoot("/")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	srv := serve(t, NewContentHandler(r, nil))
	resp, body := do(t, "GET", srv.URL+"/files"+tr.outside+"/secret", nil)
	if resp.StatusCode != 200 || body != "secret" {
		t.Errorf("GET of an absolute path = %d %q", resp.StatusCode, body)
	}
	resp, body = do(t, "PUT", srv.URL+"/files"+tr.dir+"/new", strings.NewReader("x"))
	if resp.StatusCode != http.StatusCreated || tr.read("new") != "x" {
		t.Errorf("PUT of an absolute path = %d %s", resp.StatusCode, body)
	}
}
