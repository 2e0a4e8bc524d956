package files

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// SandboxdPrefix is the path prefix of agent-sandbox's sandboxd REST API.
const SandboxdPrefix = "/v1/"

// DefaultMetadataEnvPrefix is the prefix of the environment variables /v1/metadata serves by default.
const DefaultMetadataEnvPrefix = "SANDBOX_"

// SandboxdOptions configure NewSandboxdHandler.
type SandboxdOptions struct {
	// MetadataEnvPrefix selects the environment variables /v1/metadata serves; DefaultMetadataEnvPrefix when empty.
	MetadataEnvPrefix string
	// Environ returns the environment as "NAME=value" strings; os.Environ when nil.
	Environ func() []string
	// Now returns the current time, for /v1/health's uptime; time.Now when nil.
	Now func() time.Time
	// Writes, when not nil, admits each PUT and DELETE (see WriteGate).
	Writes WriteGate
}

// SandboxdHandler serves agent-sandbox's sandboxd REST API (KEP-539.2, OpenAPI
// spec/filesystem/v1/filesystem.yaml) so that clients written for sandboxd work unchanged:
//
//   - GET /v1/files/{path}: a file as application/octet-stream (with Range), or a directory as
//     {"path", "entries": [{"name", "size", "type": "file"|"directory", "modified_at", "mode"}]};
//   - HEAD /v1/files/{path}: 200 or 404;
//   - PUT /v1/files/{path}?mode=0644: the raw body, or the multipart/form-data part "file", written
//     atomically with parents created; 204;
//   - DELETE /v1/files/{path}?recursive=true: 204, 404, or 409 for a non-empty directory;
//   - GET /v1/health: {"status": "ok", "uptime_seconds": N}, or 503 once SetReady(false);
//   - GET /v1/metadata: {"env": {...}}, the variables with the configured prefix whose names do
//     not look like credentials.
//
// Errors are {"code", "message"} with sandboxd's codes (PERMISSION_DENIED, NOT_FOUND,
// INVALID_ARGUMENT, CONFLICT, RESOURCE_EXHAUSTED, INTERNAL, UNAVAILABLE). A path leading outside
// the root, by ".." or by a symbolic link, is 403 PERMISSION_DENIED.
//
// It differs from sandboxd where sandboxd is unsafe or surprising: DELETE of a symbolic link
// removes the link rather than its target; a listing leaves out links that lead outside the root
// (sandboxd describes their targets); ".." is resolved after symbolic links, as the kernel does.
type SandboxdHandler struct {
	files   fileServer
	prefix  string
	environ func() []string
	now     func() time.Time
	started time.Time
	ready   atomic.Bool
}

var _ http.Handler = (*SandboxdHandler)(nil)

var sandboxdFlavor = flavor{
	prefix:          SandboxdPrefix + "files/",
	errorCode:       sandboxdCode,
	parseMode:       parseSandboxdMode,
	listDirectories: true,
	multipart:       true,
	putStatus:       http.StatusNoContent,
}

// NewSandboxdHandler returns sandboxd's REST API over root (sandboxd's own root is /workspace).
// It starts ready; mount it at SandboxdPrefix.
func NewSandboxdHandler(root *Root, opts SandboxdOptions) *SandboxdHandler {
	if opts.MetadataEnvPrefix == "" {
		opts.MetadataEnvPrefix = DefaultMetadataEnvPrefix
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &SandboxdHandler{
		files:   fileServer{root: root, flavor: sandboxdFlavor, writes: opts.Writes},
		prefix:  opts.MetadataEnvPrefix,
		environ: opts.Environ,
		now:     opts.Now,
		started: opts.Now(),
	}
	h.ready.Store(true)
	return h
}

// SetReady sets what /v1/health answers: 200 when ready, 503 when not. The agent sets it to
// false when it starts shutting down, so that probes and routers stop sending work.
func (h *SandboxdHandler) SetReady(ready bool) { h.ready.Store(ready) }

// ServeHTTP routes /v1/files/, /v1/health and /v1/metadata; any other path is 404 NOT_FOUND.
func (h *SandboxdHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, h.files.flavor.prefix):
		h.files.ServeHTTP(w, r)
	case r.URL.Path == SandboxdPrefix+"health" && isGet(r):
		h.health(w)
	case r.URL.Path == SandboxdPrefix+"metadata" && isGet(r):
		writeJSON(w, http.StatusOK, metadataResponse{Env: h.metadata()})
	case r.URL.Path == SandboxdPrefix+"health" || r.URL.Path == SandboxdPrefix+"metadata":
		w.Header().Set("Allow", "GET, HEAD")
		writeJSONError(w, http.StatusMethodNotAllowed, "INVALID_ARGUMENT",
			fmt.Sprintf("%s %s: method not allowed; use GET", r.Method, r.URL.Path))
	default:
		writeJSONError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf(
			"%s: no such endpoint; sandboxd's API has /v1/files/{path}, /v1/health and /v1/metadata", r.URL.Path))
	}
}

func isGet(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

type healthResponse struct {
	Status        string `json:"status"`
	UptimeSeconds int64  `json:"uptime_seconds"`
}

func (h *SandboxdHandler) health(w http.ResponseWriter) {
	if !h.ready.Load() {
		writeJSONError(w, http.StatusServiceUnavailable, "UNAVAILABLE",
			"the sandbox agent is shutting down; send new work to another sandbox")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, healthResponse{
		Status:        "ok",
		UptimeSeconds: int64(h.now().Sub(h.started) / time.Second),
	})
}

type metadataResponse struct {
	Env map[string]string `json:"env"`
}

// sensitiveMarkers are substrings of variable names that /v1/metadata never serves: sandbox code
// can call it, and credentials must not reach it this way.
var sensitiveMarkers = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "KEY", "AUTH", "PRIVATE", "COOKIE"}

func (h *SandboxdHandler) metadata() map[string]string {
	env := map[string]string{}
	for _, kv := range h.environ() {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, h.prefix) || isSensitive(name) {
			continue
		}
		env[name] = value
	}
	return env
}

// isSensitive reports whether a variable's name suggests it holds a credential.
func isSensitive(name string) bool {
	upper := strings.ToUpper(name)
	for _, m := range sensitiveMarkers {
		if strings.Contains(upper, m) {
			return true
		}
	}
	return false
}

// sandboxdCode names an error the way sandboxd does, by its HTTP status.
func sandboxdCode(_ error, status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return "INVALID_ARGUMENT"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "CONFLICT"
	case http.StatusRequestEntityTooLarge:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

var sandboxdModePattern = regexp.MustCompile(`^0[0-7]{3}$`)

// parseSandboxdMode reads sandboxd's mode parameter: "0" and three octal digits, 0644 by default.
func parseSandboxdMode(s string) (*fs.FileMode, error) {
	m := DefaultFileMode
	if s == "" {
		return &m, nil
	}
	if !sandboxdModePattern.MatchString(s) {
		return nil, fmt.Errorf("mode=%q must match ^0[0-7]{3}$, such as 0644 or 0755", s)
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return nil, fmt.Errorf("mode=%q is not octal; give a mode such as 0644", s)
	}
	m = fs.FileMode(v)
	return &m, nil
}
