package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ContentPrefix is where the agent's main mounts NewContentHandler.
const ContentPrefix = "/files/"

// NewContentHandler serves file contents over plain HTTP under ContentPrefix; the rest of the URL
// path (percent-decoded, so %2F is a "/") is the file's path in the sandbox, relative to the root
// for a confined root and absolute for a host root:
//
//   - GET streams the file as application/octet-stream with Content-Length and Last-Modified, and
//     answers Range and conditional requests; HEAD answers the same without the body.
//   - PUT ?mode=0644 streams the body into the file atomically (see Root.WriteFile), creating
//     parent directories, and answers 201 (created) or 200 (replaced) with the file's entry as
//     JSON: {name, path, size, type, modified_at, mode}. Without mode, a replaced file keeps its
//     mode and a new one gets 0644.
//   - DELETE ?recursive=true removes the file or directory (see Root.Remove) and answers 204.
//
// Errors are JSON {"code": "...", "message": "..."} with Connect's code names (not_found,
// permission_denied, ...) and the status StatusOf gives. Directories are listed through
// FilesystemService.List, not here.
//
// writes, when not nil, admits each PUT and DELETE (see WriteGate).
func NewContentHandler(root *Root, writes WriteGate) http.Handler {
	return &fileServer{root: root, flavor: kuboxFlavor, writes: writes}
}

// flavor is what differs between the two HTTP file APIs; everything else is shared.
type flavor struct {
	// prefix is the URL path the file path follows.
	prefix string
	// errorCode names the code of an error in a JSON error body.
	errorCode func(err error, status int) string
	// parseMode reads the mode query parameter ("" when absent).
	parseMode func(s string) (*fs.FileMode, error)
	// listDirectories serves a directory's listing on GET (sandboxd) instead of refusing it.
	listDirectories bool
	// multipart accepts a multipart/form-data PUT whose "file" part is the content (sandboxd).
	multipart bool
	// putStatus is the status of a successful PUT; 0 answers 201/200 with the entry as JSON.
	putStatus int
}

var kuboxFlavor = flavor{
	prefix:    ContentPrefix,
	errorCode: func(err error, _ int) string { return CodeOf(err).String() },
	parseMode: parseKuboxMode,
}

// fileServer serves GET, HEAD, PUT and DELETE on files under a flavor's prefix.
type fileServer struct {
	root   *Root
	flavor flavor
	writes WriteGate // nil: every write is admitted
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, s.flavor.prefix)
	if !ok {
		s.writeError(w, &Error{Op: r.Method, Path: r.URL.Path, Kind: ErrNotFound,
			Hint: "file paths go under " + s.flavor.prefix})
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.get(w, r, rest)
	case http.MethodPut:
		s.admitted(w, r, rest, "write", s.put)
	case http.MethodDelete:
		s.admitted(w, r, rest, "remove", s.delete)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
		writeJSONError(w, http.StatusMethodNotAllowed, s.flavor.errorCode(ErrInvalid, http.StatusMethodNotAllowed),
			fmt.Sprintf("%s %s: method not allowed; use GET, HEAD, PUT or DELETE", r.Method, r.URL.Path))
	}
}

// filePath turns what follows the prefix into the path Root methods take: "/" + rest, so that a
// host root reads it as absolute and a confined root as relative to itself.
func filePath(rest string) string { return "/" + rest }

func (s *fileServer) get(w http.ResponseWriter, r *http.Request, rest string) {
	f, e, err := s.root.Open(filePath(rest))
	if err != nil {
		s.writeError(w, err)
		return
	}
	defer func() { _ = f.Close() }()
	if e.Type == TypeDirectory {
		if s.flavor.listDirectories {
			s.listDirectory(w, rest)
			return
		}
		s.writeError(w, newError("read", s.root.shown(filePath(rest)), ErrIsDirectory, nil))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	// ServeContent answers Range, HEAD and If-Modified-Since, sets Content-Length and
	// Last-Modified, and reads the file through io.CopyN in small chunks, never all at once.
	http.ServeContent(w, r, "", e.ModTime, f)
}

func (s *fileServer) put(w http.ResponseWriter, r *http.Request, rest string) {
	p := filePath(rest)
	mode, err := s.flavor.parseMode(r.URL.Query().Get("mode"))
	if err != nil {
		s.writeError(w, &Error{Op: "write", Path: s.root.shown(p), Kind: ErrInvalid, Hint: err.Error()})
		return
	}
	body, err := s.body(r)
	if err != nil {
		s.writeError(w, &Error{Op: "write", Path: s.root.shown(p), Kind: ErrInvalid, Hint: err.Error()})
		return
	}
	existed := false
	if _, err := s.root.Stat(p); err == nil {
		existed = true
	}
	e, err := s.root.WriteFile(p, body, WriteOptions{Mode: mode})
	if err != nil {
		s.writeError(w, err)
		return
	}
	if s.flavor.putStatus != 0 {
		w.WriteHeader(s.flavor.putStatus)
		return
	}
	status := http.StatusCreated
	if existed {
		status = http.StatusOK
	}
	writeJSON(w, status, newWireEntry(e))
}

// body returns the content of a PUT: the body itself, or for a flavor that takes multipart
// uploads, the "file" part of a multipart/form-data body (parts before it are skipped unread
// into memory).
func (s *fileServer) body(r *http.Request) (io.Reader, error) {
	if !s.flavor.multipart {
		return r.Body, nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return r.Body, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, fmt.Errorf("the multipart body cannot be read (%v); send the file as the raw body or as a multipart part named \"file\"", err)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the multipart body has no part named \"file\"; name the file's part \"file\"")
		}
		if err != nil {
			return nil, fmt.Errorf("the multipart body cannot be read (%v); send the file as the raw body or as a multipart part named \"file\"", err)
		}
		if part.FormName() == "file" {
			return part, nil
		}
	}
}

func (s *fileServer) delete(w http.ResponseWriter, r *http.Request, rest string) {
	p := filePath(rest)
	recursive := false
	if v := r.URL.Query().Get("recursive"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.writeError(w, &Error{Op: "remove", Path: s.root.shown(p), Kind: ErrInvalid,
				Hint: fmt.Sprintf("recursive=%q is not a boolean; use true or false", v)})
			return
		}
		recursive = b
	}
	if err := s.root.Remove(p, recursive); err != nil {
		s.writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listDirectory answers sandboxd's directory listing. Symbolic links are described by their
// targets, as sandboxd does; links that are broken or lead outside the root are left out.
func (s *fileServer) listDirectory(w http.ResponseWriter, rest string) {
	entries, err := s.root.List(filePath(rest), 1)
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := make([]wireEntry, 0, len(entries))
	for _, e := range entries {
		if e.Type == TypeSymlink {
			target, err := s.root.statTarget(e.Path)
			if err != nil {
				continue
			}
			target.Name = e.Name
			e = target
		}
		we := newWireEntry(e)
		we.Path = "" // sandboxd's entries carry no path
		if e.Type != TypeDirectory {
			we.Type = TypeFile.String() // sandboxd knows only files and directories
		}
		out = append(out, we)
	}
	shown := rest
	if !strings.HasPrefix(shown, "/") {
		shown = "/" + shown
	}
	writeJSON(w, http.StatusOK, directoryListing{Path: shown, Entries: out})
}

// wireEntry is an entry as the HTTP APIs write it, in sandboxd's field formats: type "file",
// "directory" (and, in the kubox API only, "symlink" or "other"), modified_at in UTC RFC 3339
// to the second, mode as four octal digits.
type wireEntry struct {
	Name       string `json:"name"`
	Path       string `json:"path,omitempty"`
	Size       int64  `json:"size"`
	Type       string `json:"type"`
	ModifiedAt string `json:"modified_at"`
	Mode       string `json:"mode"`
}

func newWireEntry(e Entry) wireEntry {
	return wireEntry{
		Name:       e.Name,
		Path:       e.Path,
		Size:       e.Size,
		Type:       e.Type.String(),
		ModifiedAt: e.ModTime.UTC().Format(time.RFC3339),
		Mode:       fmt.Sprintf("%04o", unixMode(e.Mode)),
	}
}

// directoryListing is sandboxd's answer to GET on a directory.
type directoryListing struct {
	Path    string      `json:"path"`
	Entries []wireEntry `json:"entries"`
}

// parseKuboxMode reads an octal mode of three or four digits ("644", "0644", "4755").
func parseKuboxMode(s string) (*fs.FileMode, error) {
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || len(s) < 3 || len(s) > 4 || v > 0o7777 {
		return nil, fmt.Errorf("mode=%q is not an octal mode; give three or four octal digits, such as 0644 or 0755", s)
	}
	m := fileMode(uint32(v))
	return &m, nil
}

// unixMode converts a Go file mode to Unix permission bits (with setuid, setgid and sticky).
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// fileMode converts Unix permission bits (with setuid, setgid and sticky) to a Go file mode.
func fileMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

func (s *fileServer) writeError(w http.ResponseWriter, err error) {
	status := StatusOf(err)
	writeJSONError(w, status, s.flavor.errorCode(err, status), err.Error())
}

// apiError is the JSON error body both HTTP APIs write.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeJSONError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, apiError{Code: code, Message: message})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
