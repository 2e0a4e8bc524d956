package codeinterp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/agent/files"
	"github.com/kubox-dev/kubox/internal/agent/process"
)

// DefaultPort is the code interpreter's port: the one @e2b/code-interpreter dials in every
// sandbox (through E2B's host routing, "49999-<sandboxID>.<domain>").
const DefaultPort = contract.E2BCodeInterpreterPort

// DefaultInterruptGrace is how long an interrupted execution gets to end before its interpreter
// is stopped.
const DefaultInterruptGrace = 10 * time.Second

// maxRequestBytes bounds the JSON body of a request (the code of an execution).
const maxRequestBytes = 16 << 20

// Options configure NewHandler.
type Options struct {
	// Processes starts the interpreters; Root confines a context's cwd; WorkDir is the cwd of a
	// context that names none ("" is the agent's).
	Processes *process.Manager
	Root      *files.Root
	WorkDir   string
	// Environ is the environment interpreters start with (what bash's env_vars restore).
	Environ func() []string
	// Token is required of every request but /health, as the X-Access-Token header E2B's SDK
	// sends or as a bearer token; nil serves without authentication.
	Token *auth.Token
	// Authenticated, when not nil, wraps what is served once a request is authenticated (the
	// agent's activity tracker).
	Authenticated func(http.Handler) http.Handler
	// InterruptGrace is how long an interrupted execution gets before its interpreter is stopped;
	// 0 means DefaultInterruptGrace.
	InterruptGrace time.Duration
	// Log receives what the handler does on its own (an interpreter it stopped).
	Log *slog.Logger
}

// Handler serves E2B's code-interpreter wire. Close stops every interpreter.
type Handler struct {
	http.Handler
	opts Options
	mu   sync.Mutex
	// contexts by ID; defaults are the contexts of executions that name a language (or none),
	// created on first use, by language.
	contexts map[string]*kernel
	defaults map[string]*kernel
}

// NewHandler returns the handler of the code interpreter's port: POST /execute, POST and GET
// /contexts, DELETE /contexts/{id}, POST /contexts/{id}/restart, and GET /health.
func NewHandler(opts Options) *Handler {
	if opts.InterruptGrace <= 0 {
		opts.InterruptGrace = DefaultInterruptGrace
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	h := &Handler{opts: opts, contexts: map[string]*kernel{}, defaults: map[string]*kernel{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /execute", h.execute)
	mux.HandleFunc("POST /contexts", h.createContext)
	mux.HandleFunc("GET /contexts", h.listContexts)
	mux.HandleFunc("DELETE /contexts/{id}", h.removeContext)
	mux.HandleFunc("POST /contexts/{id}/restart", h.restartContext)
	var served http.Handler = mux
	if opts.Authenticated != nil {
		served = opts.Authenticated(mux)
	}
	if opts.Token != nil {
		served = authenticate(opts.Token, served)
	}
	top := http.NewServeMux()
	top.HandleFunc("GET "+contract.E2BHealthPath, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, "OK") })
	top.Handle("/", served)
	h.Handler = top
	return h
}

// Close stops every context's interpreter.
func (h *Handler) Close() {
	h.mu.Lock()
	ks := make([]*kernel, 0, len(h.contexts))
	for _, k := range h.contexts {
		ks = append(ks, k)
	}
	h.mu.Unlock()
	for _, k := range ks {
		k.remove()
	}
}

// authenticate passes on the requests that carry token, as X-Access-Token or as a bearer token;
// the others get 401 saying what to send.
func authenticate(token *auth.Token, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := auth.E2BPresented(r)
		if got != "" && token.Matches([]byte(got)) {
			next.ServeHTTP(w, r)
			return
		}
		msg := "the access token is not this sandbox's agent token: check that the request reached the intended sandbox"
		if got == "" {
			msg = "the request carries no access token: send the sandbox's agent token as the " +
				contract.E2BAccessTokenHeader + " header or as 'Authorization: Bearer <token>'"
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="kubox-agent"`)
		http.Error(w, msg, http.StatusUnauthorized)
	})
}

func (h *Handler) execute(w http.ResponseWriter, r *http.Request) {
	var req ExecuteRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.ContextID != "" && req.Language != "" {
		http.Error(w, "Only one of context_id or language can be provided", http.StatusBadRequest)
		return
	}
	if err := checkEnv(req.EnvVars); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	k, status, msg := h.kernelFor(req)
	if k == nil {
		http.Error(w, msg, status)
		return
	}
	h.stream(w, r, k, req)
}

// stream answers an execution as NDJSON, each message flushed as it comes, ending with
// end_of_execution as E2B's server does.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, k *kernel, req ExecuteRequest) {
	rc := http.NewResponseController(w)
	started := false
	enc := json.NewEncoder(w)
	send := func(m Message) error {
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if err := enc.Encode(m); err != nil {
			return err
		}
		return rc.Flush()
	}
	err := k.execute(r.Context(), req.Code, req.EnvVars, send)
	var bad *requestError
	switch {
	case errors.Is(err, errClientGone), r.Context().Err() != nil:
		return
	case err != nil && !started && errors.As(err, &bad):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil && !started:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case err != nil:
		_ = send(errorMessage("InterpreterError", err.Error(), ""))
	}
	_ = send(Message{Type: typeEndOfExecution})
}

// kernelFor finds the context of an execution: context_id's, else the default of its language;
// or the status and message of the refusal.
func (h *Handler) kernelFor(req ExecuteRequest) (*kernel, int, string) {
	if req.ContextID != "" {
		h.mu.Lock()
		defer h.mu.Unlock()
		if k := h.contexts[req.ContextID]; k != nil {
			return k, 0, ""
		}
		return nil, http.StatusNotFound, "Context " + req.ContextID +
			" not found: create one with POST /contexts (Sandbox.createCodeContext), or list them with GET /contexts"
	}
	lang, err := normalizeLanguage(req.Language)
	if err != nil {
		return nil, http.StatusBadRequest, err.Error()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := h.defaults[lang]; k != nil {
		return k, 0, ""
	}
	dir, err := h.cwd("")
	if err != nil {
		return nil, http.StatusInternalServerError, "Failed to create the default " + lang + " context: " + err.Error()
	}
	// An interpreter the image lacks is the execution's error (see kernel.execute), as E2B's
	// client shows one, and the context works once the image has it.
	k := h.newKernel(lang, dir)
	h.defaults[lang] = k
	return k, 0, ""
}

// newKernel adds a context working in dir (resolved by cwd); h.mu is held. The interpreter
// starts on the first execution.
func (h *Handler) newKernel(lang, dir string) *kernel {
	k := newKernel(Context{ID: newID(), Language: lang, Cwd: dir}, h.opts)
	h.contexts[k.info.ID] = k
	return k
}

// cwd resolves a context's working directory within the agent's file root, as envd's process
// cwd: an existing directory, or the agent's working directory (a host path) when empty.
func (h *Handler) cwd(p string) (string, error) {
	switch {
	case p == "" && h.opts.WorkDir != "":
		return h.opts.WorkDir, nil
	case p == "":
		return os.Getwd()
	}
	dir, err := h.opts.Root.Resolve(p)
	if err != nil {
		return "", fmt.Errorf("cwd %q: %w", p, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("cwd %q is not an existing directory: create it first (Sandbox.files.makeDir) or pass another", p)
	}
	return dir, nil
}

func (h *Handler) createContext(w http.ResponseWriter, r *http.Request) {
	var req CreateContextRequest
	if !readJSON(w, r, &req) {
		return
	}
	lang, err := normalizeLanguage(req.Language)
	if err != nil {
		http.Error(w, "Failed to create context: "+err.Error(), http.StatusBadRequest)
		return
	}
	dir, err := h.cwd(req.Cwd)
	if err == nil {
		// A context whose interpreter the image lacks is refused now, not at its first execution.
		err = findInterpreter(lang, h.opts.Environ(), dir)
	}
	if err != nil {
		http.Error(w, "Failed to create context: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	k := h.newKernel(lang, dir)
	h.mu.Unlock()
	writeJSON(w, http.StatusOK, k.info)
}

func (h *Handler) listContexts(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	list := make([]Context, 0, len(h.contexts))
	for _, k := range h.contexts {
		list = append(list, k.info)
	}
	h.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	writeJSON(w, http.StatusOK, list)
}

func (h *Handler) removeContext(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	h.mu.Lock()
	k := h.contexts[id]
	delete(h.contexts, id)
	for lang, d := range h.defaults {
		if d == k {
			delete(h.defaults, lang)
		}
	}
	h.mu.Unlock()
	if k == nil {
		http.Error(w, fmt.Sprintf("Context %s not found", id), http.StatusNotFound)
		return
	}
	k.remove()
	w.WriteHeader(http.StatusOK)
}

// restartContext stops the context's interpreter (an execution running ends with an error); the
// next execution starts a new one, with none of the old state.
func (h *Handler) restartContext(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	h.mu.Lock()
	k := h.contexts[id]
	h.mu.Unlock()
	if k == nil {
		http.Error(w, fmt.Sprintf("Context %s not found", id), http.StatusNotFound)
		return
	}
	k.stop()
	w.WriteHeader(http.StatusOK)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("the request body is not the JSON of %s %s (at most %d MiB): %v", r.Method, r.URL.Path, maxRequestBytes>>20, err),
			http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
