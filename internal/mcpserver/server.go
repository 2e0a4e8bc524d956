package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"

	"github.com/kubox-dev/kubox/internal/version"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// Defaults of Config.
const (
	DefaultClaimTTL    = time.Hour
	DefaultIdleRelease = 15 * time.Minute
	// DefaultMaxOutputBytes bounds the stdout and the stderr a tool call returns, each: a model's
	// context is the scarce resource, and the whole output was already streamed as progress.
	DefaultMaxOutputBytes = 64 << 10
)

// Config configures a Server.
type Config struct {
	// Namespace is where claims are made and looked up when a tool call names none.
	Namespace string
	// RouterURL is kubox-router's base URL; HTTP callers reach their sandboxes through it
	// (required for Handler).
	RouterURL string
	// API is the API server that HTTP callers' Kubernetes tokens are sent to: only its host and
	// TLS settings are used, never its credentials (required for Handler).
	API *rest.Config
	// ClaimTTL is the lifetime of a claim made without ttl_seconds; default 1h.
	ClaimTTL time.Duration
	// IdleRelease is how long a claim made through the server may go unused before the server
	// deletes it; default 15m.
	IdleRelease time.Duration
	// SessionTimeout closes HTTP sessions idle this long (their claims are then released);
	// default IdleRelease.
	SessionTimeout time.Duration
	// MaxOutputBytes bounds the stdout and the stderr that a run returns; default 64 KiB.
	MaxOutputBytes int
	// Log receives the server's own messages; default discards them.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = kubox.DefaultNamespace
	}
	if c.ClaimTTL <= 0 {
		c.ClaimTTL = DefaultClaimTTL
	}
	if c.IdleRelease <= 0 {
		c.IdleRelease = DefaultIdleRelease
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = c.IdleRelease
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server is the MCP server. Serve it over stdio (RunStdio) or HTTP (Handler), and Close it.
type Server struct {
	cfg     Config
	mcp     *mcp.Server
	claims  *registry
	callers *callerCache
	// local is the caller of stdio sessions: the user's own kubeconfig.
	local *caller
	stop  context.CancelFunc
}

// New returns a Server; it starts the goroutine that releases idle claims.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, claims: newRegistry(cfg.IdleRelease, time.Now, cfg.Log), callers: newCallerCache()}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "kubox", Title: "kubox sandboxes", Version: version.Get().GitVersion},
		&mcp.ServerOptions{
			Instructions: "Each tool call runs in a kubox sandbox: claim_sandbox first (it returns the claim name), pass that " +
				"claim to the other tools, and release_sandbox when done. Commands run in an isolated container.",
			InitializedHandler: s.sessionStarted,
		})
	s.addTools()
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.claims.releaseIdle(ctx)
	return s
}

// RunStdio serves one session on in and out (the process's stdin and stdout), acting as client
// (the user's kubeconfig), until the client closes in or ctx ends; the claims it made are then
// released.
func (s *Server) RunStdio(ctx context.Context, client *kubox.Client, in io.Reader, out io.Writer) error {
	s.local = &caller{id: "local", kube: client}
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	s.claims.releaseAll(context.WithoutCancel(ctx))
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Handler is the Streamable HTTP endpoint: every request needs a bearer token (Kubernetes or
// claim token), and tool calls act as its holder.
func (s *Server) Handler() (http.Handler, error) {
	if s.cfg.RouterURL == "" || s.cfg.API == nil {
		return nil, fmt.Errorf("kubox mcp over HTTP needs the router's URL (--router-url) and the API server (kubeconfig): " +
			"callers' tokens are used for both")
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{SessionTimeout: s.cfg.SessionTimeout, Logger: s.cfg.Log})
	return auth.RequireBearerToken(s.verify, nil)(h), nil
}

// Close releases every claim made through the server and stops its goroutine.
func (s *Server) Close(ctx context.Context) {
	s.stop()
	s.claims.releaseAll(ctx)
}

// sessionStarted ties the claims a session makes to its end. Sessionless requests (the MCP
// protocol of 2026-07-28) have no session ID: their claims are released when idle.
func (s *Server) sessionStarted(_ context.Context, req *mcp.InitializedRequest) {
	ss := req.Session
	if ss == nil || ss.ID() == "" {
		return
	}
	go func() {
		_ = ss.Wait()
		s.claims.releaseSession(context.Background(), ss.ID())
	}()
}

// nopWriteCloser leaves closing stdout to the process.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
