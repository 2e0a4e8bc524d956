package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubox-dev/kubox/internal/mcpserver"
)

type mcpOptions struct {
	http        string
	claimTTL    time.Duration
	idleRelease time.Duration
}

func newMCP(g *globalOptions) *cobra.Command {
	o := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp [--http 127.0.0.1:8765]",
		Short: "Serve kubox sandboxes to AI agents over the Model Context Protocol",
		Long: `Run an MCP server whose tools claim a sandbox (claim_sandbox), run commands and code in it with
their output streamed as progress (run_command, run_code), read, write and list its files
(read_file, write_file, list_files) and release it (release_sandbox).

Without --http it serves one client on stdin/stdout (what Claude Desktop and most MCP clients
start), acting as you: your kubeconfig for claims, the router for processes and files.

With --http it serves Streamable HTTP at / on that address for remote clients. Every request
needs "Authorization: Bearer <token>", and each tool call acts as that token's holder, never
with rights of the server's: a Kubernetes token (checked with a SelfSubjectReview, then used for
the caller's own API and router requests, so RBAC applies as for kubectl), or a claim token
(kubox token), which reaches only its claim's sandbox. The server needs the router's URL
(--router-url or the kubeconfig's) and the API server's address (the kubeconfig); it uses no
credentials of its own.

Claims made through the server are deleted when the MCP session ends, after --idle-release
without use, and when the server stops; each carries --claim-ttl in case the server dies.`,
		Example: `  # A local client (e.g. Claude Desktop's "command": "kubox", "args": ["mcp"])
  kubox mcp -n team-a

  # Remote clients, each with its own token
  kubox mcp --http 127.0.0.1:8765 --router-url http://127.0.0.1:18080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.claimTTL < 0 || o.idleRelease < 0 {
				return errors.New("--claim-ttl and --idle-release must not be negative: give durations such as 1h and 15m")
			}
			if o.http != "" {
				return o.serveHTTP(cmd, g)
			}
			return o.serveStdio(cmd, g)
		},
	}
	cmd.Flags().StringVar(&o.http, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio")
	cmd.Flags().DurationVar(&o.claimTTL, "claim-ttl", mcpserver.DefaultClaimTTL, "lifetime of a claim made without ttl_seconds")
	cmd.Flags().DurationVar(&o.idleRelease, "idle-release", mcpserver.DefaultIdleRelease,
		"delete a claim made through the server after it went unused this long (HTTP sessions idle this long end too)")
	return cmd
}

// config is the server's configuration from the flags; logs go to stderr (stdout is stdio's).
func (o *mcpOptions) config(cmd *cobra.Command, ns string) mcpserver.Config {
	return mcpserver.Config{Namespace: ns, ClaimTTL: o.claimTTL, IdleRelease: o.idleRelease,
		Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))}
}

func (o *mcpOptions) serveStdio(cmd *cobra.Command, g *globalOptions) error {
	sess, err := g.connect()
	if err != nil {
		return err
	}
	defer sess.close()
	s := mcpserver.New(o.config(cmd, sess.ns))
	defer s.Close(context.WithoutCancel(cmd.Context()))
	return s.RunStdio(cmd.Context(), sess.sdk, cmd.InOrStdin(), cmd.OutOrStdout())
}

func (o *mcpOptions) serveHTTP(cmd *cobra.Command, g *globalOptions) error {
	api, err := g.restConfig()
	if err != nil {
		return err
	}
	ns, err := g.namespace()
	if err != nil {
		return err
	}
	cfg := o.config(cmd, ns)
	cfg.API, cfg.RouterURL = api, g.routerURL
	if cfg.RouterURL == "" {
		cfg.RouterURL = g.kubeconfigRouterURL()
	}
	s := mcpserver.New(cfg)
	defer s.Close(context.WithoutCancel(cmd.Context()))
	h, err := s.Handler()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("--http %s: %w", o.http, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-cmd.Context().Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(cmd.ErrOrStderr(), "kubox mcp: serving Streamable HTTP on http://%s/ (router %s)\n", ln.Addr(), cfg.RouterURL)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
