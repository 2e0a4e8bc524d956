// Package agent assembles kubox-agent: the process manager, the file APIs, authentication and
// limits, served on the agent's port and on the compatibility port (see docs/agent.md). The
// pieces live in subpackages: process, files, auth, limits, compat.
package agent

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sys/unix"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent/activity"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
	"github.com/kubox-dev/kubox/internal/agent/compat/pyruntime"
	"github.com/kubox-dev/kubox/internal/agent/e2b"
	"github.com/kubox-dev/kubox/internal/agent/files"
	"github.com/kubox-dev/kubox/internal/agent/limits"
	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/internal/agent/sandboxd"
	"github.com/kubox-dev/kubox/internal/agent/settings"
	"github.com/kubox-dev/kubox/proto/kubox/agent/v1/agentv1connect"
)

// HealthPath answers 200 without a token while the agent serves (kubelet's readiness probe).
const HealthPath = contract.AgentHealthPath

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
	Token      *auth.Token
	CompatAuth bool
	// Root confines the agent's file APIs to a directory; empty means the whole container, with
	// relative paths relative to WorkDir.
	Root, WorkDir string
	// CompatBaseDir is python-runtime's base directory; SandboxdRoot is sandboxd's root.
	CompatBaseDir, SandboxdRoot string
	// ExecTimeout bounds python-runtime's /execute; 0 means $SANDBOX_EXEC_TIMEOUT_SECONDS, as
	// python-runtime reads it, or else its default (300 s).
	ExecTimeout time.Duration
	// SandboxdGRPCPort and SandboxdRESTPort serve sandboxd's gRPC and REST APIs (0: off), with
	// the token when CompatAuth; SandboxdExecuteTimeout and SandboxdMaxExecuteOutput bound its
	// Execute (see internal/agent/sandboxd).
	SandboxdGRPCPort, SandboxdRESTPort int
	SandboxdExecuteTimeout             time.Duration
	SandboxdMaxExecuteOutput           int64
	// E2BPort serves E2B's in-sandbox protocol, envd (internal/agent/e2b), with the agent's token
	// and file root; 0 turns it off.
	E2BPort int
	// CodeInterpreterPort serves E2B's code-interpreter wire (internal/agent/codeinterp) with the
	// agent's token and file root; 0 turns it off.
	CodeInterpreterPort int
	// CompatMaxOutputBytes bounds each output stream of a python-runtime /execute command; one
	// that writes more is killed and answered with an error naming the limit. Nil means
	// $KUBOX_COMPAT_MAX_OUTPUT_BYTES, or else DefaultCompatMaxOutputBytes; 0 means no limit.
	CompatMaxOutputBytes *int64
	// CompatMaxUploadBytes bounds a python-runtime /upload, which streams to disk. Nil means
	// $KUBOX_COMPAT_MAX_UPLOAD_BYTES, or else no limit (as python-runtime); 0 means no limit.
	CompatMaxUploadBytes *int64
	// LookupEnv reads the environment variables above; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// MaxStreams bounds the concurrent Connect/gRPC calls (streams included).
	MaxStreams int
	// MaxMessageBytes bounds the body of a Connect/gRPC request (stdin chunks, paths).
	MaxMessageBytes int64
	// Main is the container's original command, run as the agent's child; empty runs nothing.
	Main []string
	// ShutdownGrace is how long processes get after SIGTERM before SIGKILL, on shutdown.
	ShutdownGrace time.Duration
	// StopGrace is how long a command the agent ends itself on any process API (its timeout
	// passed, the call or stream that ran it ended, its output passed a limit) gets after SIGTERM
	// to its process group before SIGKILL to the group. Nil means $KUBOX_STOP_GRACE, or else
	// process.DefaultStopGrace; it must be positive.
	StopGrace *time.Duration
	// SandboxName names the sandbox in the refusal of writes during shutdown (the Pod's name,
	// which is the Sandbox's).
	SandboxName string
	// ProcRoot is the /proc mount ActivityService reads; empty means /proc.
	ProcRoot string
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
	e2b      *e2b.Handler
	interp   *codeinterp.Handler
	// root is the agent's file root; settings holds a claim's settings (internal/agent/settings).
	root     *files.Root
	settings *settings.Store
	servers  []*http.Server
	addrs    []net.Addr
	// optional servers are skipped, with a warning, when their port is taken: sandboxd's ports,
	// which a real sandboxd sidecar in the same Pod may hold.
	optional map[*http.Server]bool
	// activity counts every port's authenticated requests for ActivityService (each port wraps
	// its handler in it behind its authentication); writes is the file APIs' gate,
	// closed on Shutdown, after which sync (unix.Sync) flushes the file systems.
	activity *activity.Tracker
	writes   *activity.Writes
	sync     func()
	started  time.Time
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
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	cfg.Process.ShutdownGrace = cfg.ShutdownGrace
	stopGrace, err := durationSetting(cfg.StopGrace, FlagStopGrace, EnvStopGrace, process.DefaultStopGrace, cfg.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("the grace period of a stopped command: %w", err)
	}
	cfg.Process.StopGrace = stopGrace
	a := &Agent{cfg: cfg, activity: activity.NewTracker(nil), writes: activity.NewWrites(cfg.SandboxName),
		sync: unix.Sync, started: time.Now()}
	root, err := a.fileRoot()
	if err != nil {
		return nil, err
	}
	a.root, a.settings = root, settings.NewStore(baseEnv(cfg.Process.Env), root, cfg.Log)
	a.cfg.Process.Environ = a.settings.Environ // processes started after a claim's settings see them
	if a.procs, err = process.New(a.cfg.Process); err != nil {
		return nil, err
	}
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
	if err := a.addSandboxd(); err != nil {
		return nil, err
	}
	a.addE2B()
	a.addCodeInterpreter()
	if len(cfg.Main) > 0 {
		if a.main, err = a.procs.StartMain(process.MainSpec{Argv: cfg.Main}); err != nil {
			return nil, err
		}
		go a.reportMain()
	}
	return a, nil
}

// mainHandler serves the agent's API: ProcessService, FilesystemService, ActivityService and
// SettingsService
// (Connect, gRPC, gRPC-Web), file contents under /files/, and the health endpoint.
func (a *Agent) mainHandler() (http.Handler, error) {
	root := a.root
	streams := limits.NewStreamLimiter(a.cfg.MaxStreams, limits.DefaultRetryAfter)
	mux := http.NewServeMux()
	for _, svc := range []func() (string, http.Handler){
		func() (string, http.Handler) {
			return agentv1connect.NewProcessServiceHandler(process.NewHandler(a.procs))
		},
		func() (string, http.Handler) {
			return files.NewHandler(root, connect.WithInterceptors(a.writes.Interceptor(files.WriteProcedures...)))
		},
		func() (string, http.Handler) {
			return agentv1connect.NewActivityServiceHandler(activity.NewService(a.activity, a.processes(), a.started))
		},
		func() (string, http.Handler) {
			// ApplySettings writes files: refused and drained at shutdown like the file APIs.
			return settings.NewHandler(a.settings, connect.WithInterceptors(a.writes.Interceptor(
				agentv1connect.SettingsServiceApplySettingsProcedure)))
		},
	} {
		path, h := svc()
		mux.Handle(path, streams.Wrap(limits.BodyLimit(a.cfg.MaxMessageBytes, h)))
	}
	mux.Handle(files.ContentPrefix, files.NewContentHandler(root, a.writes)) // streamed: no body limit
	mux.HandleFunc(HealthPath, health)
	return a.authenticate(mux, true), nil
}

// baseEnv is the environment processes start from before a claim's settings: env, or else the
// agent's own.
func baseEnv(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}

// processes is what ActivityService counts as running: every process but the agent (and its
// ancestors) and the main command's tree.
func (a *Agent) processes() activity.Processes {
	return activity.Processes{Root: a.cfg.ProcRoot, Self: os.Getpid(), Main: func() int {
		if a.main == nil {
			return 0
		}
		return a.main.PID()
	}}
}

func (a *Agent) fileRoot() (*files.Root, error) {
	if a.cfg.Root != "" {
		return files.NewRoot(a.cfg.Root)
	}
	return files.NewHostRoot(a.cfg.WorkDir)
}

// compatHandler serves python-runtime's API and, for the paths it does not have, sandboxd's, and
// the agent's health at /healthz. It is the server's handler itself: python-runtime's paths must
// not be cleaned by a ServeMux. The probe paths answer GET without a token (see withProbes).
func (a *Agent) compatHandler() (http.Handler, error) {
	sbRoot, err := files.NewRoot(a.cfg.SandboxdRoot)
	if err != nil {
		return nil, fmt.Errorf("sandboxd's root: %w", err)
	}
	a.sandboxd = files.NewSandboxdHandler(sbRoot, files.SandboxdOptions{Writes: a.writes})
	pyRoot, err := files.NewRoot(a.cfg.CompatBaseDir)
	if err != nil {
		return nil, fmt.Errorf("python-runtime's base directory: %w", err)
	}
	opts, err := a.pyruntimeOptions()
	if err != nil {
		return nil, err
	}
	opts.BaseDir, opts.Resolver, opts.Runner, opts.NotFound = pyRoot.Dir(), pyRoot, runner{a.procs}, a.sandboxd
	opts.Writes = a.writes
	py, err := pyruntime.New(opts)
	if err != nil {
		return nil, err
	}
	compat := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == HealthPath {
			health(w, r)
			return
		}
		py.ServeHTTP(w, r)
	})
	counted := a.activity.Wrap(compat) // behind authentication: a refused request is no activity
	guarded := counted
	if a.cfg.CompatAuth && a.cfg.Token != nil {
		guarded = auth.Middleware(a.cfg.Token, counted, auth.Options{}) // withProbes opens the probe paths, for GET only
	}
	return withProbes(counted, guarded, CompatProbePaths...), nil
}

// addSandboxd adds the servers of sandboxd's ports (see internal/agent/sandboxd): they need the
// token like the compatibility port, except the REST port's health probe.
func (a *Agent) addSandboxd() error {
	if a.cfg.SandboxdGRPCPort == 0 && a.cfg.SandboxdRESTPort == 0 {
		return nil
	}
	root, err := files.NewRoot(a.cfg.SandboxdRoot)
	if err != nil {
		return fmt.Errorf("sandboxd's root: %w", err)
	}
	if a.cfg.SandboxdGRPCPort != 0 {
		streams := limits.NewStreamLimiter(a.cfg.MaxStreams, limits.DefaultRetryAfter)
		h := sandboxd.NewGRPCHandler(a.procs, sandboxd.ProcessOptions{Root: root, ExecuteTimeout: a.cfg.SandboxdExecuteTimeout,
			MaxExecuteOutput: a.cfg.SandboxdMaxExecuteOutput}, func(h http.Handler) http.Handler {
			return streams.Wrap(limits.BodyLimit(a.cfg.MaxMessageBytes, h))
		})
		a.addOptional(newServer(a.cfg.Host, a.cfg.SandboxdGRPCPort, a.authenticate(h, a.cfg.CompatAuth)))
	}
	if a.cfg.SandboxdRESTPort != 0 {
		if a.sandboxd == nil {
			a.sandboxd = files.NewSandboxdHandler(root, files.SandboxdOptions{Writes: a.writes})
		}
		a.addOptional(newServer(a.cfg.Host, a.cfg.SandboxdRESTPort,
			a.authenticate(a.sandboxd, a.cfg.CompatAuth, contract.SandboxdHealthPath)))
	}
	return nil
}

// addE2B adds the server of envd's API (see internal/agent/e2b) over the agent's own process
// manager, file root, limits, write gate and token. It is optional like sandboxd's ports: an image
// that runs E2B's own envd keeps the port.
func (a *Agent) addE2B() {
	if a.cfg.E2BPort == 0 {
		return
	}
	streams := limits.NewStreamLimiter(a.cfg.MaxStreams, limits.DefaultRetryAfter)
	a.e2b = e2b.NewHandler(e2b.Options{
		Processes: a.procs, Root: a.root, WorkDir: a.cfg.WorkDir, Environ: a.settings.Environ, Token: a.cfg.Token,
		Writes: a.writes, Authenticated: a.activity.Wrap,
		Wrap: func(h http.Handler) http.Handler {
			return streams.Wrap(limits.BodyLimit(a.cfg.MaxMessageBytes, h))
		},
		FilesystemOptions: []connect.HandlerOption{connect.WithInterceptors(a.writes.Interceptor(e2b.WriteProcedures...))},
	})
	a.addOptional(newServer(a.cfg.Host, a.cfg.E2BPort, a.e2b))
}

// addCodeInterpreter adds the server of E2B's code interpreter (see internal/agent/codeinterp),
// optional like E2B's port: an image that runs E2B's own keeps the port.
func (a *Agent) addCodeInterpreter() {
	if a.cfg.CodeInterpreterPort == 0 {
		return
	}
	a.interp = codeinterp.NewHandler(codeinterp.Options{Processes: a.procs, Root: a.root, WorkDir: a.cfg.WorkDir,
		Environ: a.settings.Environ, Token: a.cfg.Token, Authenticated: a.activity.Wrap, Log: a.cfg.Log})
	a.addOptional(newServer(a.cfg.Host, a.cfg.CodeInterpreterPort, a.interp))
}

func (a *Agent) addOptional(s *http.Server) {
	if a.optional == nil {
		a.optional = map[*http.Server]bool{}
	}
	a.optional[s] = true
	a.servers = append(a.servers, s)
}

// authenticate is how every port but E2B's (whose token header is envd's: internal/agent/e2b)
// admits requests: with required and a token, only those carrying the agent token, and the
// health paths. Only what it admits reaches the activity tracker, so a client without the token
// (a scanner, another tenant's Pod) cannot keep an idle sandbox awake: the tracker is fed after
// authentication, never before it.
func (a *Agent) authenticate(h http.Handler, required bool, exempt ...string) http.Handler {
	counted := a.activity.Wrap(h)
	if !required || a.cfg.Token == nil {
		return counted
	}
	return auth.Middleware(a.cfg.Token, counted, auth.Options{ExemptPaths: append([]string{HealthPath}, exempt...)})
}

// pyruntimeOptions are python-runtime's timeout and limits from the configuration and the
// environment.
func (a *Agent) pyruntimeOptions() (pyruntime.Options, error) {
	var env pyruntime.Options
	if err := env.LoadEnv(a.cfg.LookupEnv); err != nil {
		return env, err
	}
	output, err := compatLimit(a.cfg.CompatMaxOutputBytes, EnvCompatMaxOutputBytes, DefaultCompatMaxOutputBytes, a.cfg.LookupEnv)
	if err != nil {
		return env, fmt.Errorf("the /execute output limit: %w", err)
	}
	upload, err := compatLimit(a.cfg.CompatMaxUploadBytes, EnvCompatMaxUploadBytes, 0, a.cfg.LookupEnv)
	if err != nil {
		return env, fmt.Errorf("the /upload limit: %w", err)
	}
	return pyruntime.Options{
		ExecTimeout:        cmp.Or(a.cfg.ExecTimeout, env.ExecTimeout),
		MaxOutputBytes:     pyruntimeLimit(output),
		MaxUploadBytes:     pyruntimeLimit(upload),
		OutputLimitSetting: limitSetting(FlagCompatMaxOutputBytes, EnvCompatMaxOutputBytes),
		UploadLimitSetting: limitSetting(FlagCompatMaxUploadBytes, EnvCompatMaxUploadBytes),
	}, nil
}

// CompatProbePaths are the compatibility port's paths that answer GET (and HEAD) without a
// token, because kubelet probes them without one: python-runtime's "/" (agent-sandbox's
// templates probe GET / on 8888), the agent's /healthz and sandboxd's /v1/health. Each says only
// that the agent serves (sandboxd's adds its uptime); every other path and method still needs
// the token when compatibilityAuth is Required.
var CompatProbePaths = []string{"/", HealthPath, files.SandboxdPrefix + "health"}

// withProbes sends GET and HEAD requests for the probe paths to open, and every other request to
// guarded.
func withProbes(open, guarded http.Handler, paths ...string) http.Handler {
	probe := make(map[string]bool, len(paths))
	for _, p := range paths {
		probe[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if probe[r.URL.Path] && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			open.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// health answers the agent's health endpoint.
func health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}`))
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
		if err != nil && a.optional[s] && errors.Is(err, syscall.EADDRINUSE) {
			a.cfg.Log.Warn("A sandboxd or E2B port is taken, by a sidecar or the image itself (sandboxd, envd, E2B's code interpreter); the agent does not serve it",
				"address", s.Addr)
			continue
		}
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

// Addrs are the listeners' addresses: the agent's port first, then the compatibility port, then
// sandboxd's gRPC and REST ports, then the E2B port, then the code interpreter's, each when it is
// on (and not taken).
func (a *Agent) Addrs() []net.Addr { return a.addrs }

// Shutdown stops taking requests (sandboxd's health turns 503 first, and every file API refuses
// new writes, saying the sandbox is suspending) and, at the same time, stops every process:
// SIGTERM to each group, SIGKILL after the grace period. Streams that follow a process end when
// it exits, so the servers' shutdown does not wait on them; requests still open when ctx ends
// are cut. Last, once the writes in flight have finished (or ctx ended), it syncs the file
// systems, so what a client was told is written survives the Pod's deletion at a suspend.
func (a *Agent) Shutdown(ctx context.Context) error {
	if a.sandboxd != nil {
		a.sandboxd.SetReady(false)
	}
	writesDone := make(chan error, 1)
	go func() { writesDone <- a.writes.Suspend(ctx) }()
	procsDone := make(chan error, 1)
	go func() { procsDone <- a.procs.Shutdown(ctx) }()
	var errs []error
	for _, s := range a.servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			_ = s.Close()
		}
	}
	errs = append(errs, <-procsDone, <-writesDone)
	if a.e2b != nil {
		a.e2b.Close()
	}
	if a.interp != nil {
		a.interp.Close()
	}
	a.sync()
	return errors.Join(errs...)
}

// runner runs python-runtime's /execute commands through the process manager, which owns
// waiting for every child of the agent.
type runner struct{ m *process.Manager }

// errOutputLimit stops following a command whose output passed the limit.
var errOutputLimit = errors.New("output limit")

// Run follows the command's output with flow control, so no byte is dropped whatever the size,
// and keeps all of it up to maxOutput bytes per stream (when positive); past that it stops the
// command (process.Process.Stop: SIGTERM to its process group, then SIGKILL after the grace
// period) and returns a *pyruntime.OutputLimitError. The timeout and a caller that went away stop
// it the same way.
func (r runner) Run(ctx context.Context, argv []string, dir string, timeout time.Duration, maxOutput int64) ([]byte, []byte, int, error) {
	p, err := r.m.Start(process.Spec{Argv: argv, Dir: dir, Timeout: timeout, Tag: "python-runtime", FlowControl: true})
	if err != nil {
		return nil, nil, 0, err
	}
	// Each stream's output as the chunks it came in, copied once and joined once at the end: a
	// slice grown by append would copy it about five times over.
	var chunks [2][][]byte // by process.Stdout, process.Stderr
	var size [2]int64
	var over *pyruntime.OutputLimitError
	err = p.Follow(ctx, 0, 0, true, func(ev process.Event) error {
		switch {
		case ev.Output != nil:
			s := ev.Output.Stream
			if s != process.Stdout && s != process.Stderr {
				return fmt.Errorf("output on the unexpected stream %s", s)
			}
			if size[s] += int64(len(ev.Output.Data)); maxOutput > 0 && size[s] > maxOutput {
				over = &pyruntime.OutputLimitError{Stream: s.String(), Limit: maxOutput}
				return errOutputLimit
			}
			chunks[s] = append(chunks[s], bytes.Clone(ev.Output.Data))
		case ev.Dropped != nil:
			// Flow control holds the command instead; never return output with a hole.
			return fmt.Errorf("%d bytes of %s were lost", ev.Dropped.Length, ev.Dropped.Stream)
		}
		return nil
	})
	if err != nil {
		p.Stop() // SIGTERM, then SIGKILL after the grace period; nothing once the command has exited
		<-p.Done()
		if over != nil {
			return nil, nil, 0, over
		}
		return nil, nil, 0, fmt.Errorf("process %s was killed: %w", p.ID(), err)
	}
	var out [2][]byte
	for s := range chunks {
		out[s] = bytes.Join(chunks[s], nil)
		chunks[s] = nil
	}
	exit := p.Exit()
	switch {
	case exit.TimedOut:
		return nil, nil, 0, fmt.Errorf("%w after %s", pyruntime.ErrTimeout, timeout)
	case exit.Signal != 0:
		return out[process.Stdout], out[process.Stderr], -int(exit.Signal), nil
	}
	return out[process.Stdout], out[process.Stderr], exit.Code, nil
}
