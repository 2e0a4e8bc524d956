package pyruntime

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kubox-dev/kubox/internal/atomicfile"
)

var (
	accessDenied = message{"Access denied"}
	fileNotFound = message{"File not found"}
	notADir      = message{"Path is not a directory"}
)

// resolve confines name, a path as the client gave it, to the base directory: leading slashes
// are dropped (so "/etc/passwd" is the base directory's etc/passwd, as in python-runtime), and a
// path the Resolver refuses, or one with a NUL byte, is denied.
func (h *Handler) resolve(name string) (string, bool) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", false
	}
	p, err := h.resolver.Resolve(strings.TrimLeft(name, "/"))
	return p, err == nil
}

// download serves a regular file.
func (h *Handler) download(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, prefixDownload)
	p, ok := h.resolve(name)
	if !ok {
		writeJSON(w, http.StatusForbidden, accessDenied)
		return
	}
	// O_NONBLOCK: opening a FIFO must not hang the request; it is refused below as not a file.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		writeJSON(w, http.StatusNotFound, fileNotFound)
		return
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		writeJSON(w, http.StatusNotFound, fileNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", contentDisposition(name))
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// contentDisposition names the download as Starlette's FileResponse does.
func contentDisposition(name string) string {
	if q := pyQuote(name); q != name {
		return "attachment; filename*=utf-8''" + q
	}
	return `attachment; filename="` + name + `"`
}

// ListEntry is one element of the answer of GET /list/{path}.
type ListEntry struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// Type is "file" or "directory" (a symbolic link counts as what it points to).
	Type string `json:"type"`
	// ModTime is the modification time in seconds since the epoch.
	ModTime epochSeconds `json:"mod_time"`
}

// list answers the entries of a directory, in name order.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	p, ok := h.resolve(strings.TrimPrefix(r.URL.Path, prefixList))
	if !ok {
		writeJSON(w, http.StatusForbidden, accessDenied)
		return
	}
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		writeJSON(w, http.StatusNotFound, notADir)
		return
	}
	dirents, err := os.ReadDir(p)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, message{"Listing the directory failed: " + err.Error()})
		return
	}
	entries := make([]ListEntry, 0, len(dirents))
	for _, d := range dirents {
		info, err := os.Stat(filepath.Join(p, d.Name())) // follows links, as Python's scandir stat()
		if err != nil {
			if info, err = d.Info(); err != nil {
				continue // removed since it was read
			}
		}
		typ := "file"
		if info.IsDir() {
			typ = "directory"
		}
		entries = append(entries, ListEntry{
			Name:    d.Name(),
			Size:    info.Size(),
			Type:    typ,
			ModTime: epochSeconds(float64(info.ModTime().UnixNano()) / 1e9),
		})
	}
	writeJSON(w, http.StatusOK, entries)
}

// ExistsResponse is the answer of GET /exists/{path}.
type ExistsResponse struct {
	// Path is the path as the client gave it.
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
}

func (h *Handler) exists(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, prefixExists)
	p, ok := h.resolve(name)
	if !ok {
		writeJSON(w, http.StatusForbidden, accessDenied)
		return
	}
	_, err := os.Stat(p)
	writeJSON(w, http.StatusOK, ExistsResponse{Path: name, Exists: err == nil})
}

// missingFile is FastAPI's 422 for a request without the required form field "file".
var missingFile = struct {
	Detail []validationError `json:"detail"`
}{[]validationError{{Type: "missing", Loc: []string{"body", "file"}, Msg: "Field required"}}}

type validationError struct {
	Type  string   `json:"type"`
	Loc   []string `json:"loc"`
	Msg   string   `json:"msg"`
	Input any      `json:"input"`
}

// upload streams the multipart field "file" to the path its filename gives, creating the
// directories on the way. The content goes straight to disk (multipart's reader holds one
// buffer), so its size costs no memory; only a configured limit bounds it.
func (h *Handler) upload(w http.ResponseWriter, r *http.Request) {
	if h.writes != nil {
		done, err := h.writes.BeginWrite()
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, message{"File upload failed: " + err.Error()})
			return
		}
		defer done()
	}
	if h.maxUploadBytes > 0 {
		r.Body = http.MaxBytesReader(w, r.Body, h.maxUploadBytes)
	}
	mr, err := r.MultipartReader()
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, missingFile)
		return
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			writeJSON(w, http.StatusUnprocessableEntity, missingFile)
			return
		}
		if err != nil {
			h.uploadReadFailed(w, err)
			return
		}
		if part.FormName() != "file" {
			continue
		}
		// The filename as sent: Part.FileName would keep only its last element.
		_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		name, isFile := params["filename"]
		if err != nil || !isFile {
			continue // a plain form value, not a file
		}
		h.save(w, name, part)
		return
	}
}

func (h *Handler) uploadReadFailed(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, message{fmt.Sprintf(
			"File upload failed: the upload is larger than the limit of %s; raise %s, or upload the file in parts",
			sizeString(tooLarge.Limit), h.uploadSetting)})
		return
	}
	writeJSON(w, http.StatusBadRequest, detail{"There was an error parsing the body"})
}

func (h *Handler) save(w http.ResponseWriter, name string, content io.Reader) {
	p, ok := h.resolve(name)
	if !ok {
		writeJSON(w, http.StatusForbidden, accessDenied)
		return
	}
	if err := writeFile(p, content); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.uploadReadFailed(w, err)
			return
		}
		writeJSON(w, http.StatusInternalServerError, message{"File upload failed: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, message{fmt.Sprintf("File '%s' uploaded successfully.", name)})
}

// writeFile writes content to a temporary file next to p and renames it to p, so that a failed
// upload leaves p as it was. A new file gets mode 0644; a replaced one keeps its mode.
func writeFile(p string, content io.Reader) (err error) {
	mode := fs.FileMode(0o644)
	switch st, err := os.Stat(p); {
	case err == nil && st.IsDir():
		return fmt.Errorf("%s is a directory", p)
	case err == nil:
		mode = st.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.Write(p, content, mode)
}
