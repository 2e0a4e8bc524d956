package e2b

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/kubox-dev/kubox/internal/agent/files"
)

// FilesPath serves file contents: GET downloads the file named by the path query parameter,
// POST uploads one (a raw body) or several (multipart parts named "file").
const FilesPath = "/files"

// EnvsPath answers the environment processes start with, as a JSON object.
const EnvsPath = "/envs"

// fileServer serves envd's HTTP file API over the agent's root.
type fileServer struct {
	root   *files.Root
	writes files.WriteGate
}

// writtenEntry is envd's answer to an upload, one per file.
type writtenEntry struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"`
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.download(w, r)
	case http.MethodPost:
		s.admitted(w, r, s.upload)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s /files is not served: GET downloads a file, POST uploads one", r.Method))
	}
}

// download sends the file; Range and HEAD work. A directory is refused with 400, as envd does.
func (s *fileServer) download(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "the path query parameter is missing: name the file to download")
		return
	}
	f, e, err := s.root.Open(p)
	if err != nil {
		writeFileError(w, err)
		return
	}
	defer func() { _ = f.Close() }()
	if e.Type == files.TypeDirectory {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("path '%s' is a directory: only files can be downloaded", e.Path))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": e.Name}))
	http.ServeContent(w, r, "", e.ModTime, f)
}

// admitted runs a write once the agent's write gate admits it, or answers 503 while the sandbox
// suspends.
func (s *fileServer) admitted(w http.ResponseWriter, r *http.Request, serve http.HandlerFunc) {
	if s.writes != nil {
		done, err := s.writes.BeginWrite()
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		defer done()
	}
	serve(w, r)
}

// upload writes each file atomically (see files.Root.WriteFile), creating parents, and answers
// the written entries. A multipart part's file name is its path when the query gives none (E2B's
// SDKs upload several files in one request that way); a raw body needs the path query parameter.
// Content-Encoding: gzip bodies are decompressed.
func (s *fileServer) upload(w http.ResponseWriter, r *http.Request) {
	if h := metadataHeader(r.Header); h != "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("file metadata (%s) is not kept by kubox-agent: write the file without metadata, "+
			"or keep it in a file of its own", h))
		return
	}
	p := r.URL.Query().Get("path")
	body := io.Reader(r.Body)
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("the body is not gzip, as Content-Encoding says: %v", err))
			return
		}
		defer func() { _ = zr.Close() }()
		body = zr
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var written []writtenEntry
	var err error
	if mt == "multipart/form-data" {
		written, err = s.uploadParts(multipart.NewReader(body, params["boundary"]), p)
	} else {
		written, err = s.uploadOne(p, body)
	}
	if err != nil {
		writeFileError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, written)
}

// metadataHeaderPrefix starts the headers envd 0.6.2 and later take as a file's metadata on upload.
const metadataHeaderPrefix = "X-Metadata-"

// metadataHeader names the first metadata header of h, or "". kubox-agent stores no extended
// attributes, so an upload with metadata is refused rather than written without it.
func metadataHeader(h http.Header) string {
	for k := range h {
		if len(k) > len(metadataHeaderPrefix) && strings.EqualFold(k[:len(metadataHeaderPrefix)], metadataHeaderPrefix) {
			return k
		}
	}
	return ""
}

func (s *fileServer) uploadOne(p string, body io.Reader) ([]writtenEntry, error) {
	if p == "" {
		return nil, badRequest("the path query parameter is missing: name the file to write")
	}
	e, err := s.root.WriteFile(p, body, files.WriteOptions{})
	if err != nil {
		return nil, err
	}
	return []writtenEntry{{Path: e.Path, Name: e.Name, Type: "file"}}, nil
}

// uploadParts writes every part named "file"; the query's path names the first, each part's own
// file name the others.
func (s *fileServer) uploadParts(mr *multipart.Reader, p string) ([]writtenEntry, error) {
	var written []writtenEntry
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badRequest(fmt.Sprintf("the multipart body cannot be read: %v", err))
		}
		if part.FormName() != "file" {
			continue
		}
		target := partFileName(part)
		if p != "" && len(written) == 0 {
			target = p
		}
		one, err := s.uploadOne(target, part)
		if err != nil {
			return nil, err
		}
		written = append(written, one...)
	}
	if len(written) == 0 {
		return nil, badRequest(`the multipart body has no part named "file": name each file's part "file"`)
	}
	return written, nil
}

// partFileName is the part's file name as sent: multipart.Part.FileName keeps only its last
// element, and E2B's SDKs send whole paths there.
func partFileName(part *multipart.Part) string {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}

// httpError is an error with its own HTTP status.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(msg string) error { return &httpError{http.StatusBadRequest, msg} }

// writeFileError answers a failed file operation with envd's statuses: 400 for a path of the
// wrong kind or a bad request, 404 not found, 507 no space, the agent's own status otherwise.
func writeFileError(w http.ResponseWriter, err error) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		writeError(w, he.status, he.msg)
	case errors.Is(err, files.ErrIsDirectory), errors.Is(err, files.ErrNotDirectory), errors.Is(err, files.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, files.ErrResourceExhausted):
		writeError(w, http.StatusInsufficientStorage, err.Error())
	default:
		writeError(w, files.StatusOf(err), err.Error())
	}
}

// writeError answers envd's error body: the message and the HTTP status as code.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	}{msg, status})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// envs answers the environment a process would start with, as a JSON object.
func envs(environ func() []string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "only GET /envs is served")
			return
		}
		vars := map[string]string{}
		for _, kv := range environ() {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		writeJSON(w, http.StatusOK, vars)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
