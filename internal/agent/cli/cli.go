// Package cli is kubox-agent's command line: its flags, the token they name, and the checks made
// before the agent starts serving. cmd/kubox-agent runs NewCommand.
package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/agent"
	"github.com/kubox-dev/kubox/internal/agent/auth"
	"github.com/kubox-dev/kubox/internal/agent/codeinterp"
	"github.com/kubox-dev/kubox/internal/agent/process"
	"github.com/kubox-dev/kubox/internal/agent/sandboxd"
	"github.com/kubox-dev/kubox/internal/version"
)

type options struct {
	cfg            agent.Config
	tokenFile      string
	tokenEnv       string
	insecureNoAuth bool
	compatAuth     string
}

// NewCommand returns kubox-agent's root command.
func NewCommand() *cobra.Command { return newCommand(&options{}) }

// newCommand returns the command with its flags bound to o.
func newCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubox-agent [flags] [-- command [args...]]",
		Short: "Serve exec, terminals and files inside a sandbox",
		Long: `kubox-agent serves one sandbox from inside its container.

On --port it serves kubox's agent API (kubox.agent.v1 ProcessService and FilesystemService over
Connect, gRPC and gRPC-Web; file contents at /files/<path>; /healthz). On --compat-port it serves
the HTTP APIs of agent-sandbox's runtimes (python-runtime's /execute, /upload, /download, /list,
/exists; sandboxd's /v1/files and /v1/health), so their clients work unchanged. On
--sandboxd-grpc-port and --sandboxd-rest-port (by default the ports of $SANDBOXD_GRPC_ADDR and
$SANDBOXD_REST_ADDR, when the container has them) it serves sandboxd's gRPC and REST APIs, which
agent-sandbox v1's SDKs use (a port already taken, say by a sandboxd sidecar, is left to it). On
--e2b-port (49983, envd's) it serves E2B's in-sandbox API (envd's process and filesystem services,
/files, /envs, /health) for E2B's SDKs, with the token as X-Access-Token or a bearer. On
--code-interpreter-port (49999) it serves E2B's code interpreter (@e2b/code-interpreter's
runCode and contexts: Python, JavaScript and bash, one long-lived interpreter per context), with
the same token; a port the image already holds (E2B's own server) is left to it.

Every request needs "Authorization: Bearer <token>" with the token from --token-file (or the
variable named by --token-env); /healthz needs none. The command after "--" runs as the agent's
child, with the container's stdout and stderr; the agent keeps serving when it exits.

A command the agent ends itself, on every process API (its timeout passed, the call waiting for
it ended, its output passed a limit), gets SIGTERM to its process group, then SIGKILL to the
group after --stop-grace if any member is still running; a client's own signal is sent as asked.
The agent reaps every orphan, as PID 1 or as a child subreaper.

On SIGTERM (the sandbox is suspended or deleted) it refuses new file writes on every API with
503 / Unavailable, lets the writes in flight finish, stops every process (SIGTERM, then SIGKILL
after --shutdown-grace), syncs the file systems and exits.`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cfg.Main = args
			return o.run(cmd.Context())
		},
	}
	cmd.SetVersionTemplate("{{.Version}}\n")
	f := cmd.Flags()
	f.StringVar(&o.cfg.Host, "host", "", "address to listen on (empty: every interface)")
	f.IntVar(&o.cfg.Port, "port", contract.DefaultAgentPort, "port of the agent's API")
	f.IntVar(&o.cfg.CompatPort, "compat-port", contract.DefaultAgentCompatibilityPort, "port of agent-sandbox's runtime APIs; 0 turns them off")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the agent token (the controller mounts it at /.kubox/token/token)")
	f.StringVar(&o.tokenEnv, "token-env", contract.AgentTokenEnv, "environment variable holding the agent token, when --token-file is not given")
	f.BoolVar(&o.insecureNoAuth, "insecure-no-auth", false, "serve without a token: anyone who can reach the ports controls the sandbox")
	f.StringVar(&o.compatAuth, "compat-auth", "required", `"required": the compatibility port needs the token too; "disabled": it needs none (safe only behind a NetworkPolicy that admits only the router)`)
	f.StringVar(&o.cfg.Root, "root", "", "confine the agent's file APIs to this directory (default: the whole container)")
	f.StringVar(&o.cfg.CompatBaseDir, "compat-base-dir", envOr("SANDBOX_BASE_DIR", "/app"), "python-runtime's base directory (created when missing)")
	f.StringVar(&o.cfg.SandboxdRoot, "sandboxd-root", sandboxd.DefaultRoot, "root of sandboxd's APIs: files and process working directories (created when missing)")
	f.IntVar(&o.cfg.SandboxdGRPCPort, "sandboxd-grpc-port", contract.PortFromAddrEnv(os.Getenv, contract.SandboxdGRPCAddrEnv),
		"port of sandboxd's gRPC API (process.v1, watcher.v1; sandboxd's is 9090); default: the port of $"+contract.SandboxdGRPCAddrEnv+", else off (0); --compat-port=0 turns it off")
	f.IntVar(&o.cfg.SandboxdRESTPort, "sandboxd-rest-port", contract.PortFromAddrEnv(os.Getenv, contract.SandboxdRESTAddrEnv),
		"port of sandboxd's REST API (/v1/files, /v1/health, /v1/metadata; sandboxd's is 8080); default: the port of $"+contract.SandboxdRESTAddrEnv+", else off (0); --compat-port=0 turns it off")
	f.IntVar(&o.cfg.E2BPort, "e2b-port", contract.E2BEnvdPort, "port of E2B's in-sandbox API (envd: process, filesystem, /files) for E2B's SDKs; 0 turns it off; a port the image already holds is left to it")
	f.IntVar(&o.cfg.CodeInterpreterPort, "code-interpreter-port", codeinterp.DefaultPort, "port of E2B's code interpreter (@e2b/code-interpreter's runCode: Python, JavaScript, bash contexts); 0 turns it off; a port the image already holds is left to it")
	f.DurationVar(&o.cfg.SandboxdExecuteTimeout, "sandboxd-execute-timeout", 0, "longest a sandboxd Execute may run (0: only the caller's deadline)")
	f.Int64Var(&o.cfg.SandboxdMaxExecuteOutput, "sandboxd-max-execute-output", sandboxd.DefaultMaxExecuteOutput, "most bytes per stream a sandboxd Execute returns; more fails the call instead of being cut")
	f.IntVar(&o.cfg.MaxStreams, "max-streams", agent.DefaultMaxStreams, "most concurrent API calls, streams included")
	f.Var(agent.SizeFlag(&o.cfg.CompatMaxOutputBytes), agent.FlagCompatMaxOutputBytes, "most output per stream of python-runtime's /execute, e.g. 256Mi; more fails the call (default $"+agent.EnvCompatMaxOutputBytes+", else 64Mi; 0: no limit)")
	f.Var(agent.SizeFlag(&o.cfg.CompatMaxUploadBytes), agent.FlagCompatMaxUploadBytes, "largest python-runtime /upload, which streams to disk, e.g. 10Gi (default $"+agent.EnvCompatMaxUploadBytes+", else 0: no limit)")
	f.Var(agent.DurationFlag(&o.cfg.StopGrace), agent.FlagStopGrace, "when the agent ends a command itself on any process API (its timeout passed, the call waiting for it ended, its output passed a limit), how long its process group gets after SIGTERM before SIGKILL (default $"+agent.EnvStopGrace+", else "+process.DefaultStopGrace.String()+")")
	f.DurationVar(&o.cfg.ShutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM, how long processes get before SIGKILL, and writes in flight to finish")
	f.StringVar(&o.cfg.SandboxName, "sandbox-name", hostname(), "the sandbox's name, for messages (default: the host name, which is the Pod's and so the Sandbox's)")
	cmd.AddCommand(newInstall())
	return cmd
}

func newInstall() *cobra.Command {
	return &cobra.Command{
		Use:   "install DEST",
		Short: "Copy this binary to DEST (the controller's init container runs it)",
		Args:  cobra.ExactArgs(1),
		RunE:  func(_ *cobra.Command, args []string) error { return agent.Install(args[0]) },
	}
}

func (o *options) run(parent context.Context) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "kubox-agent")
	if err := o.complete(log); err != nil {
		return err
	}
	a, err := agent.New(o.cfg)
	if err != nil {
		return err
	}
	if err := a.Listen(); err != nil {
		return err
	}
	log.Info("Serving", "addresses", fmt.Sprint(a.Addrs()), "auth", o.cfg.Token != nil, "compatAuth", o.cfg.CompatAuth,
		"main", o.cfg.Main, "version", version.Get().GitVersion)
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
	log.Info("Stopping: refusing writes, finishing requests, SIGTERM to every process, then syncing", "grace", o.cfg.ShutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), o.cfg.ShutdownGrace+5*time.Second)
	defer cancel()
	return a.Shutdown(sctx)
}

// complete loads the token and checks the flags that depend on each other.
func (o *options) complete(log *slog.Logger) error {
	o.cfg.Log = log
	switch o.compatAuth {
	case "required":
		o.cfg.CompatAuth = true
	case "disabled":
	default:
		return fmt.Errorf(`--compat-auth=%q: use "required" or "disabled"`, o.compatAuth)
	}
	if o.insecureNoAuth {
		log.Warn("Serving WITHOUT authentication (--insecure-no-auth): anyone who reaches the ports controls this sandbox")
		return o.compatDirs()
	}
	tok, err := o.token()
	if err != nil {
		return errors.Join(err, errors.New("give --token-file or $"+o.tokenEnv+", or --insecure-no-auth for a sandbox nobody else can reach"))
	}
	o.cfg.Token = tok
	// The processes the agent starts inherit its environment: keep the token out of it.
	if err := os.Unsetenv(o.tokenEnv); err != nil {
		return err
	}
	if !o.cfg.CompatAuth && o.cfg.CompatPort != 0 {
		log.Warn("The compatibility port needs no token (--compat-auth=disabled): safe only where a NetworkPolicy admits nothing but the router",
			"port", o.cfg.CompatPort)
	}
	return o.compatDirs()
}

// token is the agent token from --token-file, followed as the file changes (a Pod restored from
// another Sandbox's checkpoint mounts its own token there), or else from the environment.
func (o *options) token() (*auth.Token, error) {
	if o.tokenFile != "" {
		return auth.WatchFile(o.tokenFile)
	}
	tok, err := auth.LoadToken("", o.tokenEnv)
	if err != nil {
		return nil, err
	}
	return auth.Fixed(tok), nil
}

// compatDirs creates python-runtime's and sandboxd's directories, which most images lack.
func (o *options) compatDirs() error {
	if o.cfg.CompatPort == 0 {
		o.cfg.SandboxdGRPCPort, o.cfg.SandboxdRESTPort = 0, 0
		return nil
	}
	for _, d := range []string{o.cfg.CompatBaseDir, o.cfg.SandboxdRoot} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s for the compatibility APIs: %w (give another --compat-base-dir / --sandboxd-root, or --compat-port=0)", d, err)
		}
	}
	return nil
}

// hostname is the default of --sandbox-name: a sandbox's Pod has the Sandbox's name.
func hostname() string {
	h, _ := os.Hostname()
	return h
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
