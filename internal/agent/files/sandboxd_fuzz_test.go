package files

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
)

// FuzzSandboxdRequest sends sandboxd requests built from arbitrary paths, query strings,
// content types and bodies (multipart ones included) and checks that the handler never panics,
// answers every error as {code, message}, applies only modes sandboxd allows, and never touches
// anything outside the root.
//
//	go test ./internal/agent/files -run '^$' -fuzz FuzzSandboxdRequest -fuzztime 60s
func FuzzSandboxdRequest(f *testing.F) {
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.SetBoundary("BOUNDARY")
	_ = mw.WriteField("x", "y")
	fw, _ := mw.CreateFormFile("file", "f.txt")
	_, _ = fw.Write([]byte("content"))
	_ = mw.Close()
	const mpType = "multipart/form-data; boundary=BOUNDARY"
	seeds := []struct {
		method  uint8
		path, q string
		ctype   string
		body    []byte
	}{
		{0, "/v1/files/a/file.txt", "", "", nil},
		{0, "/v1/files/a", "", "", nil},
		{0, "/v1/files/../outside/secret", "", "", nil},
		{0, "/v1/files/out/secret", "", "", nil},
		{1, "/v1/files/inlink/file.txt", "", "", nil},
		{2, "/v1/files/new/x.txt", "mode=0755", "application/octet-stream", []byte("data")},
		{2, "/v1/files/out/stolen", "mode=0644", "", []byte("data")},
		{2, "/v1/files/danglingout", "", "", []byte("data")},
		{2, "/v1/files/up.txt", "mode=0600", mpType, mp.Bytes()},
		{2, "/v1/files/up.txt", "", "multipart/form-data; boundary=", mp.Bytes()},
		{2, "/v1/files/up.txt", "mode=07777", mpType, mp.Bytes()[:20]},
		{3, "/v1/files/a", "recursive=true", "", nil},
		{3, "/v1/files/", "recursive=1", "", nil},
		{3, "/v1/files/absout", "recursive=true", "", nil},
		{3, "/v1/files/a/up/outside", "recursive=true", "", nil},
		{0, "/v1/health", "", "", nil},
		{0, "/v1/metadata", "", "", nil},
		{4, "/v1/files/a", "", "", nil},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.q, s.ctype, s.body)
	}
	methods := []string{"GET", "HEAD", "PUT", "DELETE", "POST"}
	f.Fuzz(func(t *testing.T, method uint8, path, query, ctype string, body []byte) {
		tr := newTree(t).hostile()
		h := NewSandboxdHandler(tr.root(), SandboxdOptions{Environ: func() []string { return nil }})
		req := &http.Request{
			Method:     methods[int(method)%len(methods)],
			URL:        &url.URL{Path: path, RawQuery: query},
			Proto:      "HTTP/1.1",
			ProtoMajor: 1,
			ProtoMinor: 1,
			Header:     http.Header{"Content-Type": {ctype}},
			Body:       io.NopCloser(bytes.NewReader(body)),
			Host:       "127.0.0.1",
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		if rec.Code >= 400 && req.Method != "HEAD" {
			var e apiError
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s %s?%s answered %d with %q, not {code, message}", req.Method, path, query, rec.Code, rec.Body.String())
			}
		}
		if req.Method == "PUT" && rec.Code == http.StatusNoContent {
			host, err := tr.root().Resolve(strings.TrimPrefix(path, "/v1/files/"))
			if err != nil {
				t.Fatalf("PUT %s succeeded but the path does not resolve: %v", path, err)
			}
			info, err := os.Stat(host)
			if err != nil {
				t.Fatalf("PUT %s succeeded but %s is missing: %v", path, host, err)
			}
			if m := info.Mode(); !m.IsRegular() || m&^0o777 != 0 {
				t.Fatalf("PUT %s?%s wrote mode %v", path, query, m)
			}
		}
		tr.secretIntact()
		entries, err := os.ReadDir(tr.base)
		if err != nil || len(entries) != 2 {
			t.Fatalf("something was created beside the root: %v", entries)
		}
	})
}
