package e2b_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	envdfilesystem "github.com/kubox-dev/kubox/proto/e2b/envd/filesystem"
	envdprocess "github.com/kubox-dev/kubox/proto/e2b/envd/process"
	"github.com/kubox-dev/kubox/proto/e2b/envd/process/envdprocessconnect"
)

// filesURL is the /files URL for path.
func (s *sandbox) filesURL(path string) string {
	if path == "" {
		return s.url + "/files"
	}
	return s.url + "/files?" + url.Values{"path": {path}, "username": {"user"}}.Encode()
}

// do sends a request and returns the status and body.
func do(t *testing.T, c *http.Client, method, u, contentType string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(guardCtx(t), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

type written struct {
	Path, Name, Type string
}

// Files go up as a raw body or as multipart parts (each part's file name its path, as E2B's SDKs
// send several files), with parents created, and come back down byte for byte.
func TestFilesUploadAndDownload(t *testing.T) {
	s := startSandbox(t)
	status, body := do(t, s.http, http.MethodPost, s.filesURL("/docs/a.txt"), "application/octet-stream", bytes.NewReader([]byte("alpha")))
	var got []written
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil {
		t.Fatalf("raw upload: %d %s, want 200 with the written entries", status, body)
	}
	if want := []written{{"/docs/a.txt", "a.txt", "file"}}; !slices.Equal(got, want) {
		t.Errorf("raw upload answered %v, want %v", got, want)
	}

	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	for name, content := range map[string]string{"/docs/sub/b.txt": "bravo", "/c.bin": "\x00\x01charlie"} {
		part, err := w.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = part.Write([]byte(content))
	}
	_ = w.Close()
	status, body = do(t, s.http, http.MethodPost, s.filesURL(""), w.FormDataContentType(), &mp)
	if status != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got) != 2 {
		t.Fatalf("multipart upload of two files: %d %s, want 200 with two entries", status, body)
	}

	for path, want := range map[string]string{"/docs/a.txt": "alpha", "/docs/sub/b.txt": "bravo", "/c.bin": "\x00\x01charlie"} {
		status, body := do(t, s.http, http.MethodGet, s.filesURL(path), "", nil)
		if status != http.StatusOK || string(body) != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, status, body, want)
		}
		if b, err := os.ReadFile(filepath.Join(s.root, path)); err != nil || string(b) != want {
			t.Errorf("%s on disk: %q, %v; want %q", path, b, err, want)
		}
	}

	for path, want := range map[string]int{"/missing.txt": http.StatusNotFound, "/docs": http.StatusBadRequest} {
		status, body := do(t, s.http, http.MethodGet, s.filesURL(path), "", nil)
		var e struct {
			Message string
			Code    int
		}
		if status != want || json.Unmarshal(body, &e) != nil || e.Code != want || e.Message == "" {
			t.Errorf("GET %s: %d %s, want %d with {message, code: %d}", path, status, body, want, want)
		}
	}
}

// Stat, MakeDir, ListDir with depth, Move and Remove work on the agent's root with E2B's codes.
func TestFilesystemOperations(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	s.write(t, "top.txt", "12345")

	mk, err := s.fs.MakeDir(ctx, connect.NewRequest(&envdfilesystem.MakeDirRequest{Path: "/a/b/c"}))
	if err != nil {
		t.Fatalf("MakeDir with missing parents: %v", err)
	}
	if e := mk.Msg.GetEntry(); e.GetPath() != "/a/b/c" || e.GetType() != envdfilesystem.FileType_FILE_TYPE_DIRECTORY {
		t.Errorf("MakeDir answered %v, want the directory /a/b/c", e)
	}
	if _, err := s.fs.MakeDir(ctx, connect.NewRequest(&envdfilesystem.MakeDirRequest{Path: "/a/b"})); codeOf(err) != connect.CodeAlreadyExists {
		t.Errorf("MakeDir of an existing directory: %v, want already_exists", err)
	}
	if _, err := s.fs.MakeDir(ctx, connect.NewRequest(&envdfilesystem.MakeDirRequest{Path: "/top.txt"})); codeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("MakeDir over a file: %v, want invalid_argument", err)
	}

	e, err := s.stat(ctx, "/top.txt")
	if err != nil {
		t.Fatal(err)
	}
	if e.GetName() != "top.txt" || e.GetType() != envdfilesystem.FileType_FILE_TYPE_FILE || e.GetSize() != 5 ||
		e.GetMode() != 0o644 || e.GetPermissions() != "-rw-r--r--" || e.GetOwner() == "" || e.GetGroup() == "" ||
		time.Since(e.GetModifiedTime().AsTime()) > time.Hour {
		t.Errorf("Stat /top.txt: %v, want a 5-byte file, mode 0644, with owner, group and a recent time", e)
	}
	if _, err := s.stat(ctx, "/nope"); codeOf(err) != connect.CodeNotFound {
		t.Errorf("Stat of a missing path: %v, want not_found", err)
	}
	if err := os.Symlink("/etc", filepath.Join(s.root, "etc")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.stat(ctx, "/etc/passwd"); codeOf(err) != connect.CodePermissionDenied {
		t.Errorf("Stat through a link out of the root: %v, want permission_denied", err)
	}
	if e, err := s.stat(ctx, "/etc"); err != nil || e.GetType() != envdfilesystem.FileType_FILE_TYPE_SYMLINK || e.GetSymlinkTarget() != "/etc" {
		t.Errorf("Stat of the link itself: %v, %v; want a symlink to /etc", e, err)
	}

	list := func(depth uint32) []string {
		res, err := s.fs.ListDir(ctx, connect.NewRequest(&envdfilesystem.ListDirRequest{Path: "/", Depth: depth}))
		if err != nil {
			t.Fatalf("ListDir depth %d: %v", depth, err)
		}
		var paths []string
		for _, e := range res.Msg.GetEntries() {
			paths = append(paths, e.GetPath())
		}
		return paths
	}
	s.write(t, "B.txt", "")
	// Directories first, then by name regardless of case, as envd orders them.
	if got, want := list(0), []string{"/a", "/B.txt", "/etc", "/top.txt"}; !slices.Equal(got, want) {
		t.Errorf("ListDir / depth 0: %v, want %v", got, want)
	}
	if got, want := list(3), []string{"/a", "/a/b", "/a/b/c", "/B.txt", "/etc", "/top.txt"}; !slices.Equal(got, want) {
		t.Errorf("ListDir / depth 3: %v, want %v", got, want)
	}
	if _, err := s.fs.ListDir(ctx, connect.NewRequest(&envdfilesystem.ListDirRequest{Path: "/top.txt"})); codeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("ListDir of a file: %v, want invalid_argument", err)
	}

	mv, err := s.fs.Move(ctx, connect.NewRequest(&envdfilesystem.MoveRequest{Source: "/top.txt", Destination: "/a/new/moved.txt"}))
	if err != nil || mv.Msg.GetEntry().GetPath() != "/a/new/moved.txt" {
		t.Fatalf("Move to a directory still missing: %v, %v; want the entry at /a/new/moved.txt", mv, err)
	}
	if _, err := s.fs.Move(ctx, connect.NewRequest(&envdfilesystem.MoveRequest{Source: "/nope", Destination: "/x/y"})); codeOf(err) != connect.CodeNotFound {
		t.Errorf("Move of a missing path: %v, want not_found", err)
	}
	if _, err := s.stat(ctx, "/top.txt"); codeOf(err) != connect.CodeNotFound {
		t.Errorf("Stat of the moved file's old path: %v, want not_found", err)
	}
	if _, err := s.fs.Remove(ctx, connect.NewRequest(&envdfilesystem.RemoveRequest{Path: "/a"})); err != nil {
		t.Fatalf("Remove of a directory with contents: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.root, "a")); !os.IsNotExist(err) {
		t.Errorf("/a after Remove: %v, want it gone", err)
	}
	if _, err := s.fs.Remove(ctx, connect.NewRequest(&envdfilesystem.RemoveRequest{Path: "/a"})); err != nil {
		t.Errorf("Remove of a missing path: %v, want success, as envd answers", err)
	}
}

// WatchDir sends its start event once the watch is in place, then the changes, named relative to
// the watched directory, with the entry when asked.
func TestWatchDirStreamsChanges(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	s.write(t, "w/sub/.keep", "")
	stream, err := s.fs.WatchDir(ctx, connect.NewRequest(&envdfilesystem.WatchDirRequest{Path: "/w", Recursive: true, IncludeEntry: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	if !stream.Receive() || stream.Msg().GetStart() == nil {
		t.Fatalf("the first message is %v (%v), want the start event", stream.Msg(), stream.Err())
	}
	status, body := do(t, s.http, http.MethodPost, s.filesURL("/w/sub/new.txt"), "application/octet-stream", bytes.NewReader([]byte("x")))
	if status != http.StatusOK {
		t.Fatalf("upload: %d %s", status, body)
	}
	for stream.Receive() {
		ev := stream.Msg().GetFilesystem()
		if ev == nil || ev.GetName() != "sub/new.txt" || ev.GetType() != envdfilesystem.EventType_EVENT_TYPE_CREATE {
			continue // the upload's temporary file comes and goes first
		}
		if ev.GetEntry().GetPath() != "/w/sub/new.txt" {
			t.Errorf("the create event's entry is %v, want /w/sub/new.txt's", ev.GetEntry())
		}
		return
	}
	t.Fatalf("the watch ended without a create event for sub/new.txt: %v", stream.Err())
}

// A polled watcher collects changes between GetWatcherEvents calls until RemoveWatcher.
func TestPolledWatcher(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	s.write(t, "p/.keep", "")
	cw, err := s.fs.CreateWatcher(ctx, connect.NewRequest(&envdfilesystem.CreateWatcherRequest{Path: "/p"}))
	if err != nil {
		t.Fatal(err)
	}
	id := cw.Msg.GetWatcherId()
	s.write(t, "p/made.txt", "x")
	var seen []string
	for deadline := time.Now().Add(guard); time.Now().Before(deadline) && !slices.Contains(seen, "made.txt"); time.Sleep(20 * time.Millisecond) {
		res, err := s.fs.GetWatcherEvents(ctx, connect.NewRequest(&envdfilesystem.GetWatcherEventsRequest{WatcherId: id}))
		if err != nil {
			t.Fatalf("GetWatcherEvents: %v", err)
		}
		for _, ev := range res.Msg.GetEvents() {
			if ev.GetType() == envdfilesystem.EventType_EVENT_TYPE_CREATE {
				seen = append(seen, ev.GetName())
			}
		}
	}
	if !slices.Contains(seen, "made.txt") {
		t.Fatalf("created files seen by the watcher: %v, want made.txt", seen)
	}
	if _, err := s.fs.RemoveWatcher(ctx, connect.NewRequest(&envdfilesystem.RemoveWatcherRequest{WatcherId: id})); err != nil {
		t.Fatalf("RemoveWatcher: %v", err)
	}
	if _, err := s.fs.GetWatcherEvents(ctx, connect.NewRequest(&envdfilesystem.GetWatcherEventsRequest{WatcherId: id})); codeOf(err) != connect.CodeNotFound {
		t.Errorf("GetWatcherEvents after RemoveWatcher: %v, want not_found", err)
	}
	if _, err := s.fs.CreateWatcher(ctx, connect.NewRequest(&envdfilesystem.CreateWatcherRequest{Path: "/p/made.txt"})); codeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("CreateWatcher on a file: %v, want invalid_argument", err)
	}
}

// Without the agent token, nothing but /health answers; the token works as X-Access-Token and as
// a bearer token.
func TestAuthenticationIsRequired(t *testing.T) {
	s := startSandbox(t)
	ctx := guardCtx(t)
	s.write(t, "f.txt", "secret")
	for name, c := range map[string]*http.Client{"no token": tokenClient(t, ""), "a wrong token": tokenClient(t, "x"+testToken)} {
		fs := envdprocessconnect.NewProcessClient(c, s.url, connect.WithProtoJSON())
		if _, err := fs.List(ctx, connect.NewRequest(&envdprocess.ListRequest{})); codeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("List with %s: %v, want unauthenticated", name, err)
		}
		if status, body := do(t, c, http.MethodGet, s.filesURL("/f.txt"), "", nil); status != http.StatusUnauthorized || bytes.Contains(body, []byte("secret")) {
			t.Errorf("GET /files with %s: %d %s, want 401", name, status, body)
		}
		if status, _ := do(t, c, http.MethodGet, s.url+"/envs", "", nil); status != http.StatusUnauthorized {
			t.Errorf("GET /envs with %s: %d, want 401", name, status)
		}
	}
	if status, _ := do(t, tokenClient(t, ""), http.MethodGet, s.url+"/health", "", nil); status != http.StatusNoContent {
		t.Errorf("GET /health without a token: %d, want 204", status)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.filesURL("/f.txt"), nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := tokenClient(t, "").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != "secret" {
		t.Errorf("GET /files with a bearer token: %d %q, want 200", res.StatusCode, b)
	}
	if status, body := do(t, s.http, http.MethodGet, s.url+"/envs", "", nil); status != http.StatusOK || !bytes.Contains(body, []byte(`"PATH"`)) {
		t.Errorf("GET /envs with the token: %d %s, want 200 with the environment", status, body)
	}
}

// An upload with file metadata (envd's X-Metadata-* headers) is refused with the header named,
// and nothing is written: kubox-agent keeps no extended attributes.
func TestUploadWithMetadataIsRefused(t *testing.T) {
	s := startSandbox(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.filesURL("/meta.txt"), bytes.NewReader([]byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Metadata-Owner", "alice")
	res, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("X-Metadata-Owner")) {
		t.Errorf("upload with metadata: %d %s, want 400 naming the header", res.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(s.root, "meta.txt")); !os.IsNotExist(err) {
		t.Errorf("the refused upload wrote the file (stat: %v)", err)
	}
}
