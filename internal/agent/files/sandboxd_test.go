package files

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sandboxdServer serves NewSandboxdHandler over the tree with a fixed environment and clock.
func sandboxdServer(t *testing.T, tr *tree, now *time.Time) (*SandboxdHandler, string) {
	t.Helper()
	h := NewSandboxdHandler(tr.root(), SandboxdOptions{
		Environ: func() []string {
			return []string{"SANDBOX_ID=sb-1", "SANDBOX_WORKSPACE=/workspace", "SANDBOX_API_TOKEN=t",
				"SANDBOX_DB_PASSWORD=p", "SANDBOX_SIGNING_KEY=k", "SANDBOX_AUTH_HEADER=a", "HOME=/root", "SANDBOX_EMPTY="}
		},
		Now: func() time.Time { return *now },
	})
	return h, serve(t, h).URL
}

func TestSandboxdFiles(t *testing.T) {
	tr := newTree(t).file("workspace/main.py", "print(1)\n").mkdir("workspace/src").link("workspace/link", "main.py").
		link("workspace/broken", "nope").link("workspace/out", "{outside}/secret")
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	if err := os.Chtimes(filepath.Join(tr.dir, "workspace/main.py"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	_, url := sandboxdServer(t, tr, &now)

	resp, body := do(t, "GET", url+"/v1/files/workspace/main.py", nil)
	if resp.StatusCode != 200 || body != "print(1)\n" || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("GET file = %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}

	resp, body = do(t, "GET", url+"/v1/files/workspace", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET directory = %d %s", resp.StatusCode, body)
	}
	var listing map[string]any
	if err := json.Unmarshal([]byte(body), &listing); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"path": "/workspace",
		"entries": []any{
			map[string]any{"name": "link", "size": 9.0, "type": "file", "modified_at": "2026-01-02T03:04:05Z", "mode": "0644"},
			map[string]any{"name": "main.py", "size": 9.0, "type": "file", "modified_at": "2026-01-02T03:04:05Z", "mode": "0644"},
			map[string]any{"name": "src", "size": listing["entries"].([]any)[2].(map[string]any)["size"], "type": "directory",
				"modified_at": listing["entries"].([]any)[2].(map[string]any)["modified_at"], "mode": "0755"},
		},
	}
	if diff := cmp.Diff(want, listing); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}

	for path, wantStatus := range map[string]int{
		"/v1/files/workspace/main.py": 200, "/v1/files/workspace": 200, "/v1/files/workspace/nope": 404,
		"/v1/files/%2E%2E/outside/secret": 403,
	} {
		if resp, body := do(t, "HEAD", url+path, nil); resp.StatusCode != wantStatus || body != "" {
			t.Errorf("HEAD %s = %d %q; want %d and no body", path, resp.StatusCode, body, wantStatus)
		}
	}

	errCases := map[string]struct {
		method, path string
		wantStatus   int
		wantCode     string
	}{
		"traversal":               {"GET", "/v1/files/..%2F..%2Fetc%2Fpasswd", 403, "PERMISSION_DENIED"},
		"link outside":            {"GET", "/v1/files/workspace/out", 403, "PERMISSION_DENIED"},
		"missing":                 {"GET", "/v1/files/workspace/nope", 404, "NOT_FOUND"},
		"PUT onto a directory":    {"PUT", "/v1/files/workspace/src", 400, "INVALID_ARGUMENT"},
		"PUT with a 3-digit mode": {"PUT", "/v1/files/x?mode=644", 400, "INVALID_ARGUMENT"},
		"PUT with setuid":         {"PUT", "/v1/files/x?mode=4755", 400, "INVALID_ARGUMENT"},
		"DELETE non-empty":        {"DELETE", "/v1/files/workspace", 409, "CONFLICT"},
		"DELETE missing":          {"DELETE", "/v1/files/nope", 404, "NOT_FOUND"},
		"DELETE bad recursive":    {"DELETE", "/v1/files/workspace?recursive=yes", 400, "INVALID_ARGUMENT"},
		"unknown endpoint":        {"GET", "/v1/nothing", 404, "NOT_FOUND"},
	}
	for name, tc := range errCases {
		t.Run(name, func(t *testing.T) {
			resp, body := do(t, tc.method, url+tc.path, strings.NewReader("x"))
			e := errorBody(t, resp, body)
			if resp.StatusCode != tc.wantStatus || e.Code != tc.wantCode {
				t.Errorf("%s %s = %d %+v; want %d %s", tc.method, tc.path, resp.StatusCode, e, tc.wantStatus, tc.wantCode)
			}
		})
	}
	tr.secretIntact()
}

func TestSandboxdPut(t *testing.T) {
	tr := newTree(t).file("existing.sh", "old")
	if err := os.Chmod(filepath.Join(tr.dir, "existing.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	_, url := sandboxdServer(t, tr, &now)

	resp, body := do(t, "PUT", url+"/v1/files/a/b/raw.txt?mode=0600", strings.NewReader("raw body"))
	if resp.StatusCode != http.StatusNoContent || body != "" {
		t.Fatalf("PUT raw = %d %q; want 204", resp.StatusCode, body)
	}
	assertFile(t, tr, "a/b/raw.txt", "raw body", 0o600)

	// sandboxd applies its default mode, 0644, when none is given, even to a file it replaces.
	resp, _ = do(t, "PUT", url+"/v1/files/existing.sh", strings.NewReader("new"))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT over a file = %d", resp.StatusCode)
	}
	assertFile(t, tr, "existing.sh", "new", 0o644)

	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("note", "skipped")
	fw, _ := mw.CreateFormFile("file", "ignored-name.txt")
	_, _ = fw.Write([]byte("from multipart"))
	_ = mw.Close()
	resp, body = do(t, "PUT", url+"/v1/files/up/multi.txt", &buf, "Content-Type", mw.FormDataContentType())
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT multipart = %d %s", resp.StatusCode, body)
	}
	assertFile(t, tr, "up/multi.txt", "from multipart", 0o644)

	buf.Reset()
	mw = multipart.NewWriter(&buf)
	_ = mw.WriteField("other", "x")
	_ = mw.Close()
	resp, body = do(t, "PUT", url+"/v1/files/up/none.txt", &buf, "Content-Type", mw.FormDataContentType())
	if e := errorBody(t, resp, body); resp.StatusCode != 400 || e.Code != "INVALID_ARGUMENT" || !strings.Contains(e.Message, `"file"`) {
		t.Errorf("PUT multipart without a file part = %d %+v", resp.StatusCode, e)
	}
	if tr.exists("up/none.txt") {
		t.Error("a multipart upload without a file part created the file")
	}
	assertNoTempFiles(t, tr.dir)
}

func assertFile(t *testing.T, tr *tree, rel, content string, mode os.FileMode) {
	t.Helper()
	if got := tr.read(rel); got != content {
		t.Errorf("%s holds %q, want %q", rel, got, content)
	}
	if info, err := os.Stat(filepath.Join(tr.dir, rel)); err != nil || info.Mode().Perm() != mode {
		t.Errorf("%s has mode %v (%v), want %v", rel, info.Mode(), err, mode)
	}
}

func TestSandboxdDelete(t *testing.T) {
	tr := newTree(t).file("f", "x").file("d/in", "x").file("top", "x").link("link", "d")
	now := time.Now()
	_, url := sandboxdServer(t, tr, &now)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/v1/files/f", 204}, {"/v1/files/f", 404}, {"/v1/files/d", 409}, {"/v1/files/link", 204},
		{"/v1/files/d?recursive=true", 204}, {"/v1/files/?recursive=false", 409}, {"/v1/files/?recursive=true", 204},
	} {
		if resp, body := do(t, "DELETE", url+tc.path, nil); resp.StatusCode != tc.want {
			t.Errorf("DELETE %s = %d %s; want %d", tc.path, resp.StatusCode, body, tc.want)
		}
	}
	entries, err := os.ReadDir(tr.dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("after removing the root recursively it holds %v (%v); want it empty and still there", entries, err)
	}
}

func TestSandboxdHealthAndMetadata(t *testing.T) {
	tr := newTree(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h, url := sandboxdServer(t, tr, &now)
	now = now.Add(90*time.Second + 500*time.Millisecond)

	resp, body := do(t, "GET", url+"/v1/health", nil)
	if resp.StatusCode != 200 || strings.TrimSpace(body) != `{"status":"ok","uptime_seconds":90}` {
		t.Errorf("health = %d %s", resp.StatusCode, body)
	}
	h.SetReady(false)
	resp, body = do(t, "GET", url+"/v1/health", nil)
	if e := errorBody(t, resp, body); resp.StatusCode != 503 || e.Code != "UNAVAILABLE" {
		t.Errorf("health while shutting down = %d %+v; want 503 UNAVAILABLE", resp.StatusCode, e)
	}
	h.SetReady(true)
	if resp, _ := do(t, "GET", url+"/v1/health", nil); resp.StatusCode != 200 {
		t.Errorf("health when ready again = %d", resp.StatusCode)
	}

	resp, body = do(t, "GET", url+"/v1/metadata", nil)
	var md map[string]map[string]string
	if err := json.Unmarshal([]byte(body), &md); err != nil || resp.StatusCode != 200 {
		t.Fatalf("metadata = %d %s: %v", resp.StatusCode, body, err)
	}
	wantEnv := map[string]string{"SANDBOX_ID": "sb-1", "SANDBOX_WORKSPACE": "/workspace", "SANDBOX_EMPTY": ""}
	if diff := cmp.Diff(map[string]map[string]string{"env": wantEnv}, md); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if resp, _ := do(t, "POST", url+"/v1/health", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/health = %d, want 405", resp.StatusCode)
	}
}

func TestSandboxdMetadataPrefix(t *testing.T) {
	h := NewSandboxdHandler(newTree(t).root(), SandboxdOptions{
		MetadataEnvPrefix: "KUBOX_",
		Environ:           func() []string { return []string{"KUBOX_A=1", "SANDBOX_B=2", "KUBOX_SECRET_X=3", "malformed"} },
	})
	if diff := cmp.Diff(map[string]string{"KUBOX_A": "1"}, h.metadata()); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}
