// Package agent assembles kubox-agent: the process manager, the file APIs, authentication and
// limits, served on the agent's port and on the compatibility port (see docs/agent.md). The
// pieces live in subpackages: process, files, auth, limits, compat.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/agent/compat/pyruntime"
	"github.com/kubox-dev/kubox/internal/agent/files"
	"github.com/kubox-dev/kubox/internal/agent/limits"
	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// HealthPath answers 200 without a token while the agent serves (kubelet's readiness probe).
const HealthPath = "/healthz"

// Defaults of Config's limits.
const (
	DefaultMaxStreams            = 256
	DefaultMaxMessageBytes int64 = 8 << 20
)

// Config is kubox-agent's configuration; internal/agent/cli fills it from flags.
type Config struct {
	// Host is the address to listen on ("" for every interface).
	Host string
	// Port serves the agent's API; CompatPort agent-sandbox's runtime APIs (0: off).
	Port, CompatPort int
	// Token is required of every request to Port, and to CompatPort when CompatAuth. Nil turns
	// authentication off (--insecure-no-auth).
	Token      []byte
	CompatAuth bool
	// Root confines the agent's file APIs to a directory; empty means the whole container, with
	// relative paths relative to WorkDir.
	Root, WorkDir string
	// CompatBaseDir is python-runtime's base directory; SandboxdRoot is sandboxd's root.
	CompatBaseDir, SandboxdRoot string
	// ExecTimeout bounds python-runtime's /execute; 0 means its default (300 s).
	ExecTimeout time.Duration
	// MaxStreams bounds the concurrent Connect/gRPC calls (streams included).
	MaxStreams int
	// MaxMessageBytes bounds the body of a Connect/gRPC request (stdin chunks, paths).
	MaxMessageBytes int64
	// Main is the container's original command, run as the agent's child; empty runs nothing.
	Main []string
	// ShutdownGrace is how long processes get after SIGTERM before SIGKILL, on shutdown.
	ShutdownGrace time.Duration
	// Process configures the process manager.
	Process process.Options
	// Log receives the agent's own messages.
	Log *slog.Logger
}

// Agent is a running kubox-agent.
type Agent struct {
	cfg      Config
	procs    *process.Manager
	main     *process.Process
	sandboxd *files.SandboxdHandler
	servers  []*http.Server
	addrs    []net.Addr
}

// New builds the agent: it starts the process manager (and its reaper) and the main command,
// and prepares both servers. Serve starts listening.
func New(cfg Config) (*Agent, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	cfg.Process.ShutdownGrace = cfg.ShutdownGrace
	procs, err := process.New(cfg.Process)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, procs: procs}
	mainHandler, err := a.mainHandler()
	if err != nil {
		return nil, err
	}
	a.servers = append(a.servers, newServer(cfg.Host, cfg.Port, mainHandler))
	if cfg.CompatPort != 0 {
		compat, err := a.compatHandler()
		if err != nil {
			return nil, err
		}
		a.servers = append(a.servers, newServer(cfg.Host, cfg.CompatPort, compat))
	}
	if len(cfg.Main) > 0 {
		if a.main, err = procs.StartMain(process.MainSpec{Argv: cfg.Main}); err != nil {
			return nil, err
		}
		go a.reportMain()
	}
	return a, nil
}

// mainHandler serves the agent's API: ProcessService and FilesystemService (Connect, gRPC,
// gRPC-Web), file contents under /files/, and the health endpoint.
func (a *Agent) mainHandler() (http.Handler, error) {
	root, err := a.fileRoot()
	if err != nil {
		return nil, err
	}
	streams := limits.NewStreamLimiter(a.cfg.MaxStreams, limits.DefaultRetryAfter)
	mux := http.NewServeMux()
	for _, svc := range []func() (string, http.Handler){
		func() (string, http.Handler) {
			return agentv1connect.NewProcessServiceHandler(process.NewHandler(a.procs))
		},
		func() (string, http.Handler) { return files.NewHandler(root) },
	} {
		path, h := svc()
		mux.Handle(path, streams.Wrap(limits.BodyLimit(a.cfg.MaxMessageBytes, h)))
	}
	mux.Handle(files.ContentPrefix, files.NewContentHandler(root)) // streamed: no body limit
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	return a.authenticate(mux, true), nil
}

func (a *Agent) fileRoot() (*files.Root, error) {
	if a.cfg.Root != "" {
		return files.NewRoot(a.cfg.Root)
	}
	return files.NewHostRoot(a.cfg.WorkDir)
}

// compatHandler serves python-runtime's API and, for the paths it does not have, sandboxd's.
// It is the server's handler itself: python-runtime's paths must not be cleaned by a ServeMux.
func (a *Agent) compatHandler() (http.Handler, error) {
	sbRoot, err := files.NewRoot(a.cfg.SandboxdRoot)
	if err != nil {
		return nil, fmt.Errorf("sandboxd's root: %w", err)
	}
	a.sandboxd = files.NewSandboxdHandler(sbRoot, files.SandboxdOptions{})
	pyRoot, err := files.NewRoot(a.cfg.CompatBaseDir)
	if err != nil {
		return nil, fmt.Errorf("python-runtime's base directory: %w", err)
	}
	py, err := pyruntime.New(pyruntime.Options{BaseDir: pyRoot.Dir(), Resolver: pyRoot, Runner: runner{a.procs},
		ExecTimeout: a.cfg.ExecTimeout, NotFound: a.sandboxd})
	if err != nil {
		return nil, err
	}
	return a.authenticate(py, a.cfg.CompatAuth), nil
}

func (a *Agent) authenticate(h http.Handler, required bool) http.Handler {
	if !required || a.cfg.Token == nil {
		return h
	}
	return auth.Middleware(a.cfg.Token, h, auth.Options{ExemptPaths: []string{HealthPath}})
}

func newServer(host string, port int, h http.Handler) *http.Server {
	s := &http.Server{Addr: net.JoinHostPort(host, strconv.Itoa(port)), Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.Protocols = new(http.Protocols)
	s.Protocols.SetHTTP1(true)
	s.Protocols.SetUnencryptedHTTP2(true) // gRPC without TLS (h2c)
	return s
}

// reportMain logs how the main command ended. The agent keeps serving: a sandbox outlives its
// main process, and exec and files still work to see why it ended.
func (a *Agent) reportMain() {
	<-a.main.Done()
	exit := a.main.Exit()
	a.cfg.Log.Info("The main command exited; the agent keeps serving", "command", a.cfg.Main, "code", exit.Code,
		"signal", process.SignalName(exit.Signal))
}

// Listen opens the agent's listeners; Addrs then reports them (useful with port 0 in tests).
func (a *Agent) Listen() error {
	for _, s := range a.servers {
		l, err := net.Listen("tcp", s.Addr)
		if err != nil {
			a.closeListeners()
			return fmt.Errorf("listening on %s: %w", s.Addr, err)
		}
		a.addrs = append(a.addrs, l.Addr())
		go a.serve(s, l)
	}
	return nil
}

func (a *Agent) closeListeners() {
	for _, s := range a.servers {
		_ = s.Close()
	}
}

func (a *Agent) serve(s *http.Server, l net.Listener) {
	if err := s.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.cfg.Log.Error("Serving stopped", "address", s.Addr, "error", err)
	}
}

// Addrs are the listeners' addresses: the agent's port first, then the compatibility port.
func (a *Agent) Addrs() []net.Addr { return a.addrs }

// Shutdown stops taking requests (sandboxd's health turns 503 first) and, at the same time,
// stops every process: SIGTERM to each group, SIGKILL after the grace period. Streams that
// follow a process end when it exits, so the servers' shutdown does not wait on them; requests
// still open when ctx ends are cut.
func (a *Agent) Shutdown(ctx context.Context) error {
	if a.sandboxd != nil {
		a.sandboxd.SetReady(false)
	}
	procsDone := make(chan error, 1)
	go func() { procsDone <- a.procs.Shutdown(ctx) }()
	var errs []error
	for _, s := range a.servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			_ = s.Close()
		}
	}
	return errors.Join(append(errs, <-procsDone)...)
}

// runner runs python-runtime's /execute commands through the process manager, which owns
// waiting for every child of the agent.
type runner struct{ m *process.Manager }

func (r runner) Run(ctx context.Context, argv []string, dir string, timeout time.Duration) ([]byte, []byte, int, error) {
	res, err := r.m.Run(ctx, process.Spec{Argv: argv, Dir: dir, Timeout: timeout, Tag: "python-runtime"}, nil, 0)
	if err != nil {
		return nil, nil, 0, err
	}
	if res.Exit.TimedOut {
		return res.Stdout, res.Stderr, 0, fmt.Errorf("%w after %s", pyruntime.ErrTimeout, timeout)
	}
	if res.Exit.Signal != 0 {
		return res.Stdout, res.Stderr, -int(res.Exit.Signal), nil
	}
	return res.Stdout, res.Stderr, res.Exit.Code, nil
}
