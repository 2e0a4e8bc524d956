package ui

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
)

// Prefix is where the router mounts the dashboard; APIPrefix its JSON API.
const (
	Prefix    = "/ui/"
	APIPrefix = Prefix + "api/"
)

// dist is what `make web` builds from web/.
//
//go:embed dist
var dist embed.FS

// Error is an answer the dashboard's API gives itself: a status and a message that says what is
// wrong and how to fix it.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Agent is how to reach one sandbox's agent: its base URL and the agent token to send. Done
// ends the use (the router counts it as activity of the sandbox until then).
type Agent struct {
	URL, Token string
	Done       func()
}

// Options is what the router gives the dashboard.
type Options struct {
	// RestConfig locates the API server; the dashboard drops its credentials and sends each
	// viewer's token instead.
	RestConfig *rest.Config
	// Authenticate reviews a viewer's Kubernetes token as the router reviews every token, and
	// returns the viewer's user name.
	Authenticate func(r *http.Request, token string) (string, *Error)
	// Agent authorizes the viewer as the router's connect route does (sandboxes/connect) and
	// resolves the sandbox's agent.
	Agent func(ctx context.Context, r *http.Request, token, namespace, name string) (Agent, *Error)
	// Namespace, when not empty, is the only namespace the router serves.
	Namespace string
	// MaxUploadBytes bounds an upload (413 beyond); 0: unlimited.
	MaxUploadBytes int64
	// MetricsURL, when not empty, is the controller's Prometheus endpoint the dashboard scrapes
	// for its pictures.
	MetricsURL string
	Log        *slog.Logger
}

// Handler serves /ui/.
type Handler struct {
	opts    Options
	kube    client.Client
	agents  *http.Client
	assets  map[string]*asset
	api     *http.ServeMux
	metrics *scraper
	// codePort is the code interpreter's port beside each agent; the unit tests change it.
	codePort int
	// review is selfSubjectAccessReview; the unit tests answer in its place.
	review func(ctx context.Context, attrs *authorizationv1.ResourceAttributes) (bool, error)
}

// New builds the dashboard; it starts nothing (Run scrapes the metrics).
func New(opts Options) (*Handler, error) {
	kube, err := newCallerClient(opts.RestConfig)
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, err
	}
	assets, err := loadAssets(sub)
	if err != nil {
		return nil, fmt.Errorf("loading the dashboard's assets: %w", err)
	}
	h := &Handler{opts: opts, kube: kube, agents: newAgentClient(), assets: assets, metrics: newScraper(opts.MetricsURL, opts.Log),
		codePort: contract.E2BCodeInterpreterPort}
	h.review = h.selfSubjectAccessReview
	h.api = h.newAPI()
	return h, nil
}

// Run scrapes the controller's metrics until ctx ends (nothing without a MetricsURL).
func (h *Handler) Run(ctx context.Context) { h.metrics.run(ctx) }

// ServeHTTP serves the assets (no credentials needed: they hold no data) and the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, APIPrefix) {
		w.Header().Set("Cache-Control", "no-store")
		h.api.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, errorf(http.StatusMethodNotAllowed, "the dashboard's pages are read with GET"))
		return
	}
	hdr := w.Header()
	// The page runs only its own code and is never framed: the token it holds stays with it.
	hdr.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "+
		"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	serveAsset(w, r, h.assets, strings.TrimPrefix(r.URL.Path, Prefix))
}

// errorBody is the JSON of every error, as the router's own.
type errorBody struct {
	Error string `json:"error"`
	Code  int    `json:"code"`
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.Code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kubox-router"`)
	}
	writeJSON(w, e.Code, errorBody{Error: e.Message, Code: e.Code})
}

func itoa(n int) string { return strconv.Itoa(n) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
