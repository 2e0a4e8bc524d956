package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	watcherv1 "github.com/kubox-dev/kubox/proto/watcher/v1"
)

// listing is sandboxd's DirectoryListing.
type listing struct {
	Path    string `json:"path"`
	Entries []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
		Type string `json:"type"`
		Mode string `json:"mode"`
	} `json:"entries"`
}

func TestFilesWriteReadListDelete(t *testing.T) {
	s := startSandbox(t)
	s.put(t, "src/main.py", "print('hi')\n")
	if code, _, body := s.do(t, http.MethodPut, "/v1/files/src/run.sh?mode=0755", bytes.NewReader([]byte("#!/bin/sh\n")), true); code != http.StatusNoContent {
		t.Fatalf("PUT with mode: %d %s", code, body)
	}
	// A multipart upload (the "file" part), as browsers and some SDKs send it.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, err := mw.CreateFormFile("file", "data.bin")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte{0, 1, 2, 3})
	_ = mw.Close()
	if code, _, body := s.do(t, http.MethodPut, "/v1/files/src/data.bin", &form, true, "Content-Type", mw.FormDataContentType()); code != http.StatusNoContent {
		t.Fatalf("multipart PUT: %d %s", code, body)
	}

	if code, _, body := s.do(t, http.MethodGet, "/v1/files/src/main.py", nil, true); code != http.StatusOK || string(body) != "print('hi')\n" {
		t.Errorf("GET src/main.py: %d %q", code, body)
	}
	if fi, err := os.Stat(filepath.Join(s.root, "src/run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("src/run.sh: %v, mode %v; want 0755", err, fi.Mode())
	}
	code, _, body := s.do(t, http.MethodGet, "/v1/files/src", nil, true)
	if code != http.StatusOK {
		t.Fatalf("GET src: %d %s", code, body)
	}
	var l listing
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("GET src: %v in %s", err, body)
	}
	type entry struct {
		Name, Type string
		Size       int64
	}
	var got []entry
	for _, e := range l.Entries {
		got = append(got, entry{e.Name, e.Type, e.Size})
	}
	want := []entry{{"data.bin", "file", 4}, {"main.py", "file", 12}, {"run.sh", "file", 10}}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b entry) bool { return a.Name < b.Name })); diff != "" {
		t.Errorf("listing of src (-want +got):\n%s", diff)
	}

	if code, _, _ := s.do(t, http.MethodHead, "/v1/files/src/main.py", nil, true); code != http.StatusOK {
		t.Errorf("HEAD src/main.py: %d, want 200", code)
	}
	if code, _, body := s.do(t, http.MethodDelete, "/v1/files/src", nil, true); code != http.StatusConflict {
		t.Errorf("DELETE of a non-empty directory without recursive: %d %s, want 409", code, body)
	}
	if code, _, body := s.do(t, http.MethodDelete, "/v1/files/src?recursive=true", nil, true); code != http.StatusNoContent {
		t.Errorf("DELETE recursive: %d %s, want 204", code, body)
	}
	if code, _, _ := s.do(t, http.MethodHead, "/v1/files/src/main.py", nil, true); code != http.StatusNotFound {
		t.Errorf("HEAD after DELETE: %d, want 404", code)
	}
	if code, _, body := s.do(t, http.MethodGet, "/v1/files/..%2F..%2Fetc%2Fpasswd", nil, true); code != http.StatusForbidden {
		t.Errorf("GET outside the root: %d %s, want 403", code, body)
	}
}

func TestHealthNeedsNoTokenButFilesDo(t *testing.T) {
	s := startSandbox(t)
	code, _, body := s.do(t, http.MethodGet, "/v1/health", nil, false)
	var h struct {
		Status string `json:"status"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Status != "ok" {
		t.Errorf("GET /v1/health without a token: %d %s, want 200 {\"status\":\"ok\"}", code, body)
	}
	if code, hdr, _ := s.do(t, http.MethodGet, "/v1/files/", nil, false); code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
		t.Errorf("GET /v1/files/ without a token: %d, want 401 with WWW-Authenticate", code)
	}
	if code, _, body := s.do(t, http.MethodGet, "/v1/metadata", nil, true); code != http.StatusOK || !json.Valid(body) {
		t.Errorf("GET /v1/metadata: %d %s, want 200 and JSON", code, body)
	}
}

func TestWatchDirSeesAnUpload(t *testing.T) {
	s := startSandbox(t)
	s.put(t, "logs/.keep", "")
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	stream, err := s.conn.NewStream(ctx, serverStream, methodWatchDir)
	if err != nil {
		t.Fatalf("WatchDir: %v", err)
	}
	if err := stream.SendMsg(&watcherv1.WatchDirRequest{Path: "logs", Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	events := make(chan *watcherv1.FileEvent)
	go func() {
		defer close(events)
		for {
			ev := &watcherv1.FileEvent{}
			if err := stream.RecvMsg(ev); err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					t.Errorf("WatchDir stream: %v", err)
				}
				return
			}
			events <- ev
		}
	}()
	defer func() {
		cancel()
		for range events {
		}
	}()
	// A watch reports what happens after it is in place, and has no "started" event: upload until
	// the upload is seen.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		s.put(t, "logs/app.log", "line\n")
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the watch ended before it reported the upload")
			}
			if ev.GetPath() == "logs/app.log" && (ev.GetType() == watcherv1.FileEventType_FILE_EVENT_TYPE_CREATE ||
				ev.GetType() == watcherv1.FileEventType_FILE_EVENT_TYPE_WRITE) {
				return
			}
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("no event for logs/app.log")
		}
	}
}
