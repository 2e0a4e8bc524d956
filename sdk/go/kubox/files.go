package kubox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// Files reads, writes, lists and watches the files of a sandbox. Paths are the sandbox's: when
// the agent runs with a root directory (--root), inside it.
type Files struct{ s *Sandbox }

// Files returns the sandbox's file API.
func (s *Sandbox) Files() *Files { return &Files{s: s} }

// FileInfo describes a file in a sandbox.
type FileInfo struct {
	// Name is the last element of Path.
	Name string
	// Path is the file's absolute path in the sandbox.
	Path string
	// Size is the file's size in bytes.
	Size int64
	// Mode holds the permission bits and the type bits (os.ModeDir, os.ModeSymlink).
	Mode os.FileMode
	// ModTime is when the content last changed.
	ModTime time.Time
	// IsDir is true for a directory.
	IsDir bool
}

// FileEvent is a change Watch reports.
type FileEvent struct {
	// Path is the file's path in the sandbox.
	Path string
	// Op is "create", "write", "remove", "rename" or "chmod".
	Op string
}

func (e endpoint) files() agentv1connect.FilesystemServiceClient {
	return agentv1connect.NewFilesystemServiceClient(e.http, e.base)
}

func (f *Files) object(path string) string { return "file " + path + " in " + f.s.object() }

// contentURL is the URL of path's contents under the agent's /files/.
func contentURL(base, path string) string {
	segs := strings.Split(strings.TrimLeft(path, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return base + "/files/" + strings.Join(segs, "/")
}

// do sends a request for path's contents and returns the response of a success.
func (f *Files) do(ctx context.Context, method, path, query string, body io.Reader, size int64) (*http.Response, error) {
	ep, err := f.s.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	u := contentURL(ep.base, path)
	if query != "" {
		u += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("kubox: %s: %w", f.object(path), err)
	}
	if body != nil {
		req.ContentLength = size // -1: unknown, sent chunked
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := ep.http.Do(req)
	if err != nil {
		return nil, wrapCallError(err, f.object(path))
	}
	if resp.StatusCode >= 400 {
		return nil, errorFromResponse(resp, f.object(path))
	}
	return resp, nil
}

// Read streams the file's contents; close the reader when done.
func (f *Files) Read(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := f.do(ctx, http.MethodGet, path, "", nil, 0)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ReadFile returns the file's contents.
func (f *Files) ReadFile(ctx context.Context, path string) ([]byte, error) {
	r, err := f.Read(ctx, path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, wrapCallError(err, f.object(path))
	}
	return b, nil
}

// Write streams r into the file, atomically (readers see the old or the new contents), creating
// its parent directories. mode 0 keeps a replaced file's mode and gives a new one 0644.
func (f *Files) Write(ctx context.Context, path string, r io.Reader, mode os.FileMode) error {
	return f.write(ctx, path, r, -1, mode)
}

// WriteFile writes data into the file, as Write.
func (f *Files) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	return f.write(ctx, path, bytes.NewReader(data), int64(len(data)), mode)
}

func (f *Files) write(ctx context.Context, path string, r io.Reader, size int64, mode os.FileMode) error {
	query := ""
	if mode != 0 {
		query = "mode=" + strconv.FormatUint(uint64(mode.Perm()), 8)
	}
	resp, err := f.do(ctx, http.MethodPut, path, query, r, size)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// Stat describes the file; a final symbolic link is described itself, not followed.
func (f *Files) Stat(ctx context.Context, path string) (*FileInfo, error) {
	ep, err := f.s.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := ep.files().Stat(ctx, connect.NewRequest(&agentv1.StatRequest{Path: path}))
	if err != nil {
		return nil, wrapCallError(err, f.object(path))
	}
	fi := fileInfo(resp.Msg.GetEntry())
	return &fi, nil
}

// List describes the entries of the directory, sorted by path.
func (f *Files) List(ctx context.Context, path string) ([]FileInfo, error) {
	ep, err := f.s.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := ep.files().List(ctx, connect.NewRequest(&agentv1.ListRequest{Path: path, Depth: 1}))
	if err != nil {
		return nil, wrapCallError(err, "directory "+path+" in "+f.s.object())
	}
	out := make([]FileInfo, 0, len(resp.Msg.GetEntries()))
	for _, e := range resp.Msg.GetEntries() {
		out = append(out, fileInfo(e))
	}
	return out, nil
}

// MakeDir creates the directory and its missing parents; an existing directory is a success.
func (f *Files) MakeDir(ctx context.Context, path string) error {
	ep, err := f.s.endpoint(ctx)
	if err != nil {
		return err
	}
	_, err = ep.files().MakeDir(ctx, connect.NewRequest(&agentv1.MakeDirRequest{Path: path, Parents: true}))
	return wrapCallError(err, "directory "+path+" in "+f.s.object())
}

// Remove deletes the file, symbolic link or empty directory; with recursive, a directory and
// everything in it.
func (f *Files) Remove(ctx context.Context, path string, recursive bool) error {
	ep, err := f.s.endpoint(ctx)
	if err != nil {
		return err
	}
	_, err = ep.files().Remove(ctx, connect.NewRequest(&agentv1.RemoveRequest{Path: path, Recursive: recursive}))
	return wrapCallError(err, f.object(path))
}

// Watch reports changes in the directory (and, with recursive, below it) until ctx ends. It
// returns once the agent watches, so every change made after it returns is reported. The
// events channel is closed when the watch ends; a watch that ends for any reason but ctx sends
// its error on the errors channel first (e.g. ErrNotFound when the directory is removed).
func (f *Files) Watch(ctx context.Context, path string, recursive bool) (<-chan FileEvent, <-chan error, error) {
	ep, err := f.s.endpoint(ctx)
	if err != nil {
		return nil, nil, err
	}
	obj := "directory " + path + " in " + f.s.object()
	stream, err := ep.files().Watch(ctx, connect.NewRequest(&agentv1.WatchRequest{Directory: path, Recursive: recursive}))
	if err != nil {
		return nil, nil, wrapCallError(err, obj)
	}
	if !stream.Receive() || stream.Msg().GetStarted() == nil {
		err := stream.Err()
		_ = stream.Close()
		if err == nil {
			err = errors.New("the agent did not start the watch")
		}
		return nil, nil, wrapCallError(err, obj)
	}
	events := make(chan FileEvent, 64)
	errs := make(chan error, 1)
	go func() {
		defer close(events)
		defer func() { _ = stream.Close() }()
		for stream.Receive() {
			ev := stream.Msg().GetEvent()
			if ev == nil {
				continue
			}
			select {
			case events <- FileEvent{Path: ev.GetPath(), Op: eventOp(ev.GetType())}:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		err := stream.Err()
		if err == nil {
			err = errors.New("the agent ended the watch")
		}
		errs <- wrapCallError(err, obj)
	}()
	return events, errs, nil
}

func eventOp(t agentv1.FileEventType) string {
	switch t {
	case agentv1.FileEventType_FILE_EVENT_TYPE_CREATE:
		return "create"
	case agentv1.FileEventType_FILE_EVENT_TYPE_WRITE:
		return "write"
	case agentv1.FileEventType_FILE_EVENT_TYPE_REMOVE:
		return "remove"
	case agentv1.FileEventType_FILE_EVENT_TYPE_RENAME:
		return "rename"
	case agentv1.FileEventType_FILE_EVENT_TYPE_CHMOD:
		return "chmod"
	}
	return "unknown"
}

func fileInfo(e *agentv1.FileEntry) FileInfo {
	mode := os.FileMode(e.GetMode()).Perm()
	switch e.GetType() {
	case agentv1.FileType_FILE_TYPE_DIRECTORY:
		mode |= os.ModeDir
	case agentv1.FileType_FILE_TYPE_SYMLINK:
		mode |= os.ModeSymlink
	case agentv1.FileType_FILE_TYPE_OTHER:
		mode |= os.ModeIrregular
	}
	fi := FileInfo{Name: e.GetName(), Path: e.GetPath(), Size: e.GetSize(), Mode: mode,
		IsDir: e.GetType() == agentv1.FileType_FILE_TYPE_DIRECTORY}
	if t := e.GetModifiedTime(); t != nil {
		fi.ModTime = t.AsTime()
	}
	return fi
}
