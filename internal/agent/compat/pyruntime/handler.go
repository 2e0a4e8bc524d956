// Package pyruntime serves the HTTP API of agent-sandbox's python-runtime example
// (examples/python-runtime-sandbox, port 8888) from kubox-agent, so agent-sandbox's Python and Go
// clients work unchanged against a kubox sandbox:
//
//	GET  /                 {"status":"ok","message":"Sandbox Runtime is active."}
//	POST /execute          {"command": str} -> {"stdout","stderr","exit_code"}
//	POST /upload           multipart field "file" -> {"message": "File '<name>' uploaded successfully."}
//	GET  /download/{path}  the file, application/octet-stream
//	GET  /list/{path}      [{"name","size","type","mod_time"}]
//	GET  /exists/{path}    {"path", "exists"}
//
// Paths are relative to the base directory (SANDBOX_BASE_DIR, default /app), leading slashes
// dropped, and confined to it by a Resolver: a path that leaves it gets 403 {"message":"Access
// denied"}. /execute splits its command like Python's shlex.split and runs it without a shell in
// the base directory through a Runner; whatever goes wrong, it answers with exit_code 1 and
// stderr "Failed to execute command: <reason>", with HTTP 200 as python-runtime does, except for
// the two limits below (413, 507).
//
// Where kubox differs from python-runtime, it is on purpose: the /execute body is bounded (413
// instead of unbounded memory); an upload streams to a temporary file and is renamed into place
// (a failed upload leaves the old file intact; no size limit unless one is configured, and then
// 413 naming it); a command's output is returned whole up to a configured limit per stream, and
// a command that passes it is killed and answered with HTTP 507 and a message naming the limit
// and its setting, never with its output cut short; output that is not UTF-8 is passed with
// replacement characters rather than failing the command; a malformed /execute body gets the
// execute failure answer rather than FastAPI's 422; and a listing or file-system failure gets a
// JSON message rather than a bare "Internal Server Error".
//
// Handler routes on the request's unescaped path itself and must not be mounted under an
// http.ServeMux: the mux cleans paths and would redirect "/list/." or "/download/a/../b", which
// python-runtime serves (or refuses) as given. Use Options.NotFound to chain another handler
// (sandboxd's /v1/ API) for every other path.
package pyruntime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// Defaults, as python-runtime has them where it has one.
const (
	// DefaultBaseDir is the directory paths are relative to and commands run in.
	DefaultBaseDir = "/app"
	// DefaultExecTimeout is how long a command may run before it is stopped.
	DefaultExecTimeout = 300 * time.Second
	// DefaultMaxJSONBytes bounds the body of POST /execute.
	DefaultMaxJSONBytes = 1 << 20
	// DefaultMaxOutputBytes bounds what /execute keeps of each of a command's output streams.
	// python-runtime keeps everything (bounded by the container's memory); a limit that fails
	// loudly is the difference.
	DefaultMaxOutputBytes int64 = 64 << 20
	// DefaultMaxUploadBytes is no limit: an upload streams to disk, so the file system bounds it,
	// as in python-runtime.
	DefaultMaxUploadBytes int64 = -1
)

// StatusOutputTooLarge is the HTTP status of an /execute whose command wrote more than the
// limit: 507 Insufficient Storage, the agent could not hold the answer. It is an error status,
// so clients raise it, and not one of the 5xx that agent-sandbox's clients retry (500, 502, 503,
// 504), so the command is not run again.
const StatusOutputTooLarge = http.StatusInsufficientStorage

// Resolver maps a path relative to the base directory to the real path of the file it names. It
// resolves symbolic links in the part that exists, accepts paths whose last components do not
// exist yet (an upload's target), maps "" to the base directory itself, and returns an error for
// any path that leads outside the base directory. kubox-agent's files package provides one.
type Resolver interface {
	Resolve(path string) (string, error)
}

// Runner runs a command to completion: argv without a shell, in dir, in a process group of its
// own, stopped (the whole group: SIGTERM, then SIGKILL after a grace period) after timeout or
// when ctx ends. It returns the command's output and exit code (a negative signal number when a
// signal ended it, as Python reports); err is for a command that could not start, that was
// stopped at the timeout, in which case err wraps ErrTimeout, or that wrote more than maxOutput
// bytes (when positive) to stdout or to stderr, in which case the Runner stops it and err is an
// *OutputLimitError. A Runner never returns output cut short.
//
// kubox-agent's process manager implements it: one reaper owns wait() for every child of the
// agent, so this package never waits for a process itself.
type Runner interface {
	Run(ctx context.Context, argv []string, dir string, timeout time.Duration, maxOutput int64) (stdout, stderr []byte, exitCode int, err error)
}

// ErrTimeout is wrapped by a Runner's error when the command ran out of time.
var ErrTimeout = errors.New("the command timed out")

// OutputLimitError is a Runner's error for a command that wrote more than the limit to one of
// its output streams.
type OutputLimitError struct {
	// Stream is "stdout" or "stderr".
	Stream string
	// Limit is the limit in bytes.
	Limit int64
}

func (e *OutputLimitError) Error() string {
	return fmt.Sprintf("the command wrote more than the limit of %s to %s", sizeString(e.Limit), e.Stream)
}

// sizeString writes n bytes for people: "67108864 bytes (64 MiB)".
func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Options configures a Handler.
type Options struct {
	// BaseDir is the directory commands run in; Resolver must be rooted there too.
	// Default: DefaultBaseDir.
	BaseDir string
	// Resolver confines file paths to BaseDir. Required.
	Resolver Resolver
	// Runner runs the commands of /execute. Required.
	Runner Runner
	// ExecTimeout bounds each command. Default: DefaultExecTimeout.
	ExecTimeout time.Duration
	// MaxJSONBytes bounds the body of /execute. Default: DefaultMaxJSONBytes.
	MaxJSONBytes int64
	// MaxOutputBytes bounds each output stream of an /execute command; a command that writes
	// more is killed and its answer is an error naming the limit. Zero means
	// DefaultMaxOutputBytes, a negative value no limit (the container's memory bounds it).
	MaxOutputBytes int64
	// MaxUploadBytes bounds the body of /upload; a larger upload gets 413 naming the limit.
	// Zero means DefaultMaxUploadBytes (no limit), a negative value no limit.
	MaxUploadBytes int64
	// OutputLimitSetting and UploadLimitSetting name, in the error a limit causes, the settings
	// that change MaxOutputBytes and MaxUploadBytes (kubox-agent's flags and variables).
	OutputLimitSetting, UploadLimitSetting string
	// Path is the list of directories in which /execute looks up a program named without a
	// slash, to report a missing one as Python does. Default: $PATH, or Python's "/bin:/usr/bin"
	// when it is not set.
	Path string
	// NotFound serves the paths python-runtime does not have. Default: FastAPI's 404
	// {"detail":"Not Found"}.
	NotFound http.Handler
	// Writes, when not nil, admits each /upload (see WriteGate).
	Writes WriteGate
}

// WriteGate admits writes while the agent serves and refuses them once it shuts down:
// kubox-agent's activity.Writes. A refused /upload is answered 503, which python-runtime's
// clients retry.
type WriteGate interface {
	// BeginWrite admits a write, returning the function to call when it has finished, or the
	// refusal, whose message the client gets.
	BeginWrite() (done func(), err error)
}

// Handler serves python-runtime's API; see the package documentation.
type Handler struct {
	baseDir        string
	resolver       Resolver
	runner         Runner
	execTimeout    time.Duration
	maxJSONBytes   int64
	maxOutputBytes int64 // 0: no limit
	maxUploadBytes int64 // 0: no limit
	outputSetting  string
	uploadSetting  string
	path           string
	notFound       http.Handler
	writes         WriteGate
}

// New returns a Handler for opts, with defaults for the fields left zero.
func New(opts Options) (*Handler, error) {
	if opts.Resolver == nil || opts.Runner == nil {
		return nil, errors.New("the python-runtime API needs a Resolver and a Runner")
	}
	if opts.ExecTimeout < 0 || opts.MaxJSONBytes < 0 {
		return nil, fmt.Errorf("the python-runtime API's timeout (%s) and body limit (%d) must not be negative",
			opts.ExecTimeout, opts.MaxJSONBytes)
	}
	path, ok := os.LookupEnv("PATH")
	if !ok {
		path = pythonDefaultPath
	}
	h := &Handler{
		baseDir:        orDefault(opts.BaseDir, DefaultBaseDir),
		resolver:       opts.Resolver,
		runner:         opts.Runner,
		execTimeout:    orDefault(opts.ExecTimeout, DefaultExecTimeout),
		maxJSONBytes:   orDefault(opts.MaxJSONBytes, DefaultMaxJSONBytes),
		maxOutputBytes: max(orDefault(opts.MaxOutputBytes, DefaultMaxOutputBytes), 0),
		maxUploadBytes: max(orDefault(opts.MaxUploadBytes, DefaultMaxUploadBytes), 0),
		outputSetting:  orDefault(opts.OutputLimitSetting, "the agent's output limit"),
		uploadSetting:  orDefault(opts.UploadLimitSetting, "the agent's upload limit"),
		path:           orDefault(opts.Path, path),
		notFound:       opts.NotFound,
		writes:         opts.Writes,
	}
	if h.notFound == nil {
		h.notFound = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusNotFound, detail{"Not Found"})
		})
	}
	return h, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Route prefixes of the endpoints that take a path.
const (
	prefixDownload = "/download/"
	prefixList     = "/list/"
	prefixExists   = "/exists/"
)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/":
		h.only(w, r, http.MethodGet, h.health)
	case p == "/execute":
		h.only(w, r, http.MethodPost, h.execute)
	case p == "/upload":
		h.only(w, r, http.MethodPost, h.upload)
	case strings.HasPrefix(p, prefixDownload):
		h.only(w, r, http.MethodGet, h.download)
	case strings.HasPrefix(p, prefixList):
		h.only(w, r, http.MethodGet, h.list)
	case strings.HasPrefix(p, prefixExists):
		h.only(w, r, http.MethodGet, h.exists)
	case p+"/" == prefixDownload || p+"/" == prefixList || p+"/" == prefixExists:
		// Starlette redirects to the path with the slash its route needs (the empty path: the base
		// directory).
		u := *r.URL
		u.Path, u.RawPath = p+"/", ""
		w.Header().Set("Location", u.String())
		w.WriteHeader(http.StatusTemporaryRedirect)
	default:
		h.notFound.ServeHTTP(w, r)
	}
}

func (h *Handler) only(w http.ResponseWriter, r *http.Request, method string, serve http.HandlerFunc) {
	if r.Method != method {
		w.Header().Set("Allow", method)
		writeJSON(w, http.StatusMethodNotAllowed, detail{"Method Not Allowed"})
		return
	}
	serve(w, r)
}

func (h *Handler) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}{"ok", "Sandbox Runtime is active."})
}

// detail is FastAPI's error body.
type detail struct {
	Detail string `json:"detail"`
}

// message is python-runtime's error body.
type message struct {
	Message string `json:"message"`
}

// writeJSON writes v the way FastAPI's JSONResponse does: compact, no HTML escaping, no trailing
// newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only the fixed types of this package are encoded; none can fail.
		panic(fmt.Sprintf("pyruntime: encoding a %T: %v", v, err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
