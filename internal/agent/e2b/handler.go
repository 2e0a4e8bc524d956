package e2b

import (
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/agent/files"
	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/proto/e2b/envd/filesystem/envdfilesystemconnect"
	"github.com/kubox-dev/kubox/proto/e2b/envd/process/envdprocessconnect"
)

// Options configure NewHandler.
type Options struct {
	// Processes runs the processes; Root confines the file APIs and cwd; WorkDir is where
	// processes run without a cwd ("" is the agent's).
	Processes *process.Manager
	Root      *files.Root
	WorkDir   string
	// Environ is the environment processes start with, which GET /envs answers.
	Environ func() []string
	// Token is required of every request but /health; nil serves without authentication.
	Token *auth.Token
	// Authenticated, when not nil, wraps what is served once a request is authenticated (the
	// agent's activity tracker: a refused request is no activity).
	Authenticated func(http.Handler) http.Handler
	// Writes is the agent's write gate: MakeDir, Move, Remove and uploads are refused once the
	// sandbox suspends. Nil admits every write.
	Writes files.WriteGate
	// Wrap, when not nil, wraps each Connect service (the agent's stream and message limits).
	Wrap func(http.Handler) http.Handler
	// FilesystemOptions are added to the Filesystem service's handler (the write gate's
	// interceptor for WriteProcedures).
	FilesystemOptions []connect.HandlerOption
}

// Handler serves envd's API. Close stops its polled watchers.
type Handler struct {
	http.Handler
	fs *FilesystemService
}

// Close stops the watchers CreateWatcher started.
func (h *Handler) Close() { h.fs.Close() }

// NewHandler returns the handler of the E2B port: envd's Process and Filesystem services
// (Connect, gRPC, gRPC-Web), /files, /envs and /health.
func NewHandler(opts Options) *Handler {
	wrap := opts.Wrap
	if wrap == nil {
		wrap = func(h http.Handler) http.Handler { return h }
	}
	fsvc := NewFilesystemService(opts.Root)
	mux := http.NewServeMux()
	path, h := envdprocessconnect.NewProcessHandler(NewProcessService(opts.Processes, opts.Root, opts.WorkDir))
	mux.Handle(path, wrap(h))
	path, h = envdfilesystemconnect.NewFilesystemHandler(fsvc, opts.FilesystemOptions...)
	mux.Handle(path, wrap(h))
	mux.Handle(FilesPath, &fileServer{root: opts.Root, writes: opts.Writes})
	mux.Handle(EnvsPath, envs(opts.Environ))
	mux.HandleFunc(contract.E2BHealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	var served http.Handler = mux
	if opts.Authenticated != nil {
		served = opts.Authenticated(mux)
	}
	if opts.Token != nil {
		served = authenticate(opts.Token, served)
	}
	return &Handler{Handler: served, fs: fsvc}
}

// authenticate passes on the requests that carry token, as E2B's X-Access-Token header or as
// `Authorization: Bearer`, and /health. E2B's SDKs also send `Authorization: Basic <user>:` to
// name a user; with an access token present that header is not read. Others get 401: Connect's
// error body on the Connect services (the SDKs map it to their authentication error), envd's on
// the HTTP endpoints.
func authenticate(token *auth.Token, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == contract.E2BHealthPath {
			next.ServeHTTP(w, r)
			return
		}
		got := auth.E2BPresented(r)
		if got != "" && token.Matches([]byte(got)) {
			next.ServeHTTP(w, r)
			return
		}
		unauthenticated(w, r, got == "")
	})
}

func unauthenticated(w http.ResponseWriter, r *http.Request, missing bool) {
	msg := "the access token is not this sandbox's agent token: check that the request reached the intended sandbox"
	if missing {
		msg = "the request carries no access token: send the sandbox's agent token as the " +
			contract.E2BAccessTokenHeader + " header or as 'Authorization: Bearer <token>'"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="kubox-agent"`)
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, "/process.") || strings.HasPrefix(r.URL.Path, "/filesystem.") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(mustJSON(map[string]string{"code": connect.CodeUnauthenticated.String(), "message": msg}))
		return
	}
	writeError(w, http.StatusUnauthorized, msg)
}
