// Package cli is kubox-router's command line: flags (agent-sandbox's names where it has them),
// their environment variables, and the checks made before the router starts.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router"
	"github.com/kubox-dev/kubox/internal/version"
)

// Environment variables agent-sandbox's Python router reads; kubox-router honours them too.
const (
	envSharedToken     = "ROUTER_AUTH_TOKEN"
	envUnauthenticated = "ALLOW_UNAUTHENTICATED_ROUTER"
)

// envMemoryLimit is the container's memory limit in bytes, which the Deployment passes with a
// resourceFieldRef; without GOMEMLIMIT the router sets its Go memory limit to 80% of it: the
// rest is for what the Go runtime does not count, mostly the binary's code (about 30 MiB).
const envMemoryLimit = "KUBOX_CONTAINER_MEMORY_LIMIT"

// baselineMemory is the router's memory besides its requests in flight: the Go runtime, the
// Kubernetes clients, the binary's code and the informer cache of a few hundred Sandboxes and
// SandboxClaims (measured about 45 MiB resident; docs/router.md).
const baselineMemory = 48 << 20

type options struct {
	cfg             router.Config
	kubeconfig      string
	keyFile         string
	sharedTokenFile string
	// agentPort is the deprecated, ignored --agent-port.
	agentPort int
	audit     auditOptions
}

// NewCommand returns kubox-router's root command.
func NewCommand() *cobra.Command {
	o := &options{cfg: router.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "kubox-router [flags]",
		Short: "Route clients to sandboxes, with Kubernetes authentication",
		Long: `kubox-router proxies HTTP, WebSocket, gRPC and Connect traffic to sandboxes:
  /sandboxes/{namespace}/{name}/...  and  /claims/{namespace}/{name}/...   (the agent's port)
  X-Sandbox-ID / X-Sandbox-Namespace / X-Sandbox-Port headers              (agent-sandbox's clients)
  {port}-{id}.<--preview-domain>                                            (browsers)
  <--path-routing-prefix>/{namespace}/{name}/{port}/...                     (browsers, session cookie; on --path-routing-host only)
Clients authenticate with a Kubernetes token allowed to create sandboxes/connect or
sandboxclaims/connect, a claim token (POST /v1/claims/{namespace}/{name}/token), or the shared
token. See docs/router.md.`,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.SetVersionTemplate("{{.Version}}\n")
	o.bindFlags(cmd)
	return cmd
}

func (o *options) bindFlags(cmd *cobra.Command) {
	f, c := cmd.Flags(), &o.cfg
	f.StringVar(&c.HTTPAddr, "http-bind-address", c.HTTPAddr, "address of the proxy listener (HTTP/1.1 and h2c)")
	f.StringVar(&c.MetricsAddr, "metrics-bind-address", c.MetricsAddr, `address of the Prometheus /metrics listener ("0": off)`)
	f.StringVar(&c.HealthAddr, "health-probe-bind-address", c.HealthAddr, `address of the /healthz and /readyz listener ("0": off)`)
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig to reach the Kubernetes API (default: in-cluster, then $KUBECONFIG)")
	f.StringVar(&c.Namespace, "namespace", "", "serve the sandboxes and claims of this namespace only (default: all)")
	f.StringVar(&o.keyFile, "agent-token-key-file", "", "file holding the key shared with kubox-controller (required): agent tokens are derived from it, claim tokens signed with it")
	f.StringVar(&o.sharedTokenFile, "shared-token-file", "", "file holding a bearer token that opens every route (also $"+envSharedToken+")")
	f.BoolVar(&c.AllowUnauthenticatedHeaderRouting, "allow-unauthenticated-header-routing", false,
		"admit X-Sandbox-ID requests without credentials (also $"+envUnauthenticated+"=true); safe ONLY when the router is reachable solely through kubectl port-forward")
	f.IntVar(&o.agentPort, "agent-port", 0, "ignored")
	_ = f.MarkDeprecated("agent-port", "it is ignored: the router reads each sandbox's agent ports from its status.agent, "+
		"which kubox-controller records from the sandbox's Pod; set agent ports in the controller's configuration (agent.port)")
	f.StringVar(&c.PreviewDomain, "preview-domain", "", "serve {port}-{id}.<domain> hosts to browsers (empty: off)")
	f.StringVar(&c.E2BDomain, "e2b-domain", "", "serve E2B's control API on api.<domain> and envd on {port}-{sandboxID}.<domain> (empty: off)")
	f.StringVar(&c.E2BNamespace, "e2b-namespace", "", "namespace of E2B's sandboxes (empty: the API key's ServiceAccount's)")
	f.StringVar(&c.UIMetricsURL, "ui-metrics-url", "", "kubox-controller's metrics URL, which the dashboard (/ui/) scrapes "+
		"for its claim latency picture (empty: no picture; e.g. http://kubox-controller-metrics.kubox-system:8080/metrics)")
	f.StringVar(&c.PathRoutingPrefix, "path-routing-prefix", "", "serve <prefix>/{namespace}/{name}/{port}/... to browsers, "+
		"with a session cookie from <prefix>/{namespace}/{name}/kubox-session (empty: off; e.g. /browse; needs --path-routing-host)")
	f.StringVar(&c.PathRoutingHost, "path-routing-host", "", "the host name path routes are served on, and nothing else: "+
		"sandboxes' pages get an origin apart from the dashboard's (required with --path-routing-prefix; e.g. sandboxes.example.com)")
	f.BoolVar(&c.PathRoutingRewriteResponses, "path-routing-rewrite-responses", false, "on path routes, rewrite Location and "+
		"Content-Location headers that point at the sandbox's root so they stay under the prefix")
	f.StringSliceVar(&c.CORSAllowedOrigins, "cors-allowed-origins", nil, "origins of web pages (https://app.example.com) whose "+
		"scripts may call /sandboxes/ and /claims/ with a token, as @kubox/sdk/web does (default: none)")
	f.DurationVar(&c.ProxyTimeout, "proxy-timeout", c.ProxyTimeout, "how long to wait for a sandbox's response headers; also caps X-Sandbox-Timeout")
	f.Int64Var(&c.MaxRequestBodyBytes, "max-request-body-bytes", c.MaxRequestBodyBytes, "largest request body (413 beyond; 0: unlimited)")
	f.IntVar(&c.MaxConnectionsPerClient, "max-connections-per-client", c.MaxConnectionsPerClient, "requests one client IP may have in flight, streams and WebSockets included (429 beyond; 0: unlimited)")
	f.IntVar(&c.MaxInflightRequests, "max-inflight-requests", c.MaxInflightRequests, "requests the router may have in flight at once, all clients together, streams and WebSockets included (503 beyond; 0: unlimited); with --max-response-header-bytes it bounds the router's memory")
	f.Int64Var(&c.MaxResponseHeaderBytes, "max-response-header-bytes", c.MaxResponseHeaderBytes, "largest response header block (HTTP/1.1) or header list (h2c) a sandbox may send (502 beyond)")
	f.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "close client keep-alive connections idle this long")
	f.DurationVar(&c.ClaimTokenMaxTTL, "claim-token-max-ttl", c.ClaimTokenMaxTTL, "longest lifetime of a minted claim token")
	f.BoolVar(&c.AllowLoopbackPodIP, "allow-loopback-pod-ip", false, "dial loopback and link-local pod IPs (for tests only)")
	f.BoolVar(&c.AccessLog, "access-log", c.AccessLog, "log one JSON line per request")
	f.DurationVar(&c.AuthCacheTTL, "tokenreview-cache-ttl", c.AuthCacheTTL, "how long TokenReview and SubjectAccessReview answers are reused (0: not at all)")
	f.IntVar(&c.MaxBearerTokenBytes, "max-bearer-token-bytes", c.MaxBearerTokenBytes, "longest bearer token the router considers (401 beyond, before any API call)")
	b := &c.TokenReviewBudget
	f.Float64Var(&b.QPS, "tokenreview-qps", b.QPS, "TokenReviews per second of tokens not known to be good, all clients together (429 beyond; 0: unlimited)")
	f.IntVar(&b.Burst, "tokenreview-burst", b.Burst, "burst of --tokenreview-qps")
	f.IntVar(&b.MaxInflight, "tokenreview-max-inflight", b.MaxInflight, "TokenReviews of tokens not known to be good at once, all clients together (429 beyond; 0: unlimited)")
	f.Float64Var(&b.QPSPerClient, "tokenreview-qps-per-client", b.QPSPerClient, "TokenReviews per second of tokens not known to be good, per client IP (429 beyond; 0: unlimited)")
	f.IntVar(&b.BurstPerClient, "tokenreview-burst-per-client", b.BurstPerClient, "burst of --tokenreview-qps-per-client")
	f.IntVar(&b.MaxInflightPerClient, "tokenreview-max-inflight-per-client", b.MaxInflightPerClient, "TokenReviews of tokens not known to be good at once, per client IP (429 beyond; 0: unlimited)")
	f.IntVar(&c.UpstreamMaxRetries, "upstream-max-retries", c.UpstreamMaxRetries, "dial retries to a sandbox (only failed dials are retried)")
	f.DurationVar(&c.UpstreamRetryDelay, "upstream-retry-initial-delay", c.UpstreamRetryDelay, "wait before the first dial retry; doubled each time")
	f.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "on SIGTERM, how long requests in flight get to finish")
	f.DurationVar(&c.WakeTimeout, "wake-timeout", c.WakeTimeout, "how long a request for a suspended sandbox the router wakes (idlePolicy wake OnRequest) waits for it to be Ready (504 beyond)")
	o.addAuditFlags(f)
}

func (o *options) run(cmd *cobra.Command) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "kubox-router")
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	o.cfg.Log = log
	if err := o.complete(log); err != nil {
		return err
	}
	restConfig, err := o.restConfig()
	if err != nil {
		return err
	}
	applyMemoryLimit(log, &o.cfg)
	rt, err := router.New(o.cfg, restConfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("Starting", "version", version.Get().GitVersion, "namespace", o.cfg.Namespace, "previewDomain", o.cfg.PreviewDomain,
		"pathRoutingPrefix", o.cfg.PathRoutingPrefix, "pathRoutingHost", o.cfg.PathRoutingHost,
		"sharedToken", len(o.cfg.SharedToken) > 0, "unauthenticatedHeaderRouting", o.cfg.AllowUnauthenticatedHeaderRouting,
		"auditSinks", o.audit.sinks)
	return rt.Start(ctx)
}

// complete loads the key and the shared token and reads the environment.
func (o *options) complete(log *slog.Logger) error {
	if o.keyFile == "" {
		return errors.New("--agent-token-key-file is required: give the file holding the key kubox-controller uses " +
			"(its agent.tokenKeyFile); for a new installation make one with: head -c 48 /dev/urandom | base64 > agent-token-key")
	}
	key, err := contract.LoadAgentTokenKey(o.keyFile)
	if err != nil {
		return fmt.Errorf("--agent-token-key-file: %w", err)
	}
	o.cfg.AgentTokenKey = key
	if o.cfg.SharedToken, err = sharedToken(o.sharedTokenFile); err != nil {
		return err
	}
	if v := os.Getenv(envUnauthenticated); strings.EqualFold(v, "true") {
		o.cfg.AllowUnauthenticatedHeaderRouting = true
	}
	if o.cfg.AllowUnauthenticatedHeaderRouting {
		log.Warn("UNAUTHENTICATED header routing is on (--allow-unauthenticated-header-routing / " + envUnauthenticated + "): " +
			"anyone who reaches this router can use every sandbox by X-Sandbox-ID. This is safe ONLY when the router is " +
			"reachable solely through kubectl port-forward (no Service of type LoadBalancer/NodePort, no Ingress or Gateway)")
	}
	if o.cfg.AllowLoopbackPodIP {
		log.Warn("Loopback and link-local pod IPs are dialed (--allow-loopback-pod-ip): for tests only")
	}
	if o.cfg.AuditSinks, err = o.auditSinks(context.Background()); err != nil {
		return err
	}
	return nil
}

// applyMemoryLimit sets the Go memory limit from the container's (unless GOMEMLIMIT is set), so
// the garbage collector works harder before the kernel kills the router, and warns when the
// limits of requests in flight let the router's memory pass it.
func applyMemoryLimit(log *slog.Logger, cfg *router.Config) {
	limit, _ := strconv.ParseInt(strings.TrimSpace(os.Getenv(envMemoryLimit)), 10, 64)
	if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit / 5 * 4)
	}
	bound := cfg.MemoryBound()
	log.Info("Memory bounds", "perRequestBytes", cfg.PerRequestMemoryBound(), "inflightBytes", bound,
		"baselineBytes", baselineMemory, "containerLimitBytes", limit, "goMemoryLimitBytes", debug.SetMemoryLimit(-1))
	switch {
	case bound == 0:
		log.Warn("--max-inflight-requests=0: nothing bounds the memory requests in flight can hold; a hostile sandbox can exhaust it")
	case limit > 0 && baselineMemory+bound > limit/5*4:
		log.Warn("The limits let requests in flight hold more memory than the container has: lower --max-inflight-requests or "+
			"--max-response-header-bytes, or raise the memory limit", "inflightBytes", bound, "containerLimitBytes", limit)
	}
}

// sharedToken reads the shared token from file, else from $ROUTER_AUTH_TOKEN; none is fine.
func sharedToken(file string) ([]byte, error) {
	var tok []byte
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--shared-token-file: %w", err)
		}
		tok = bytes.TrimSpace(b)
	} else {
		tok = bytes.TrimSpace([]byte(os.Getenv(envSharedToken)))
	}
	if len(tok) > 0 && len(tok) < 32 {
		return nil, fmt.Errorf("the shared token has %d bytes; it needs at least 32 (make one with: head -c 32 /dev/urandom | base64)", len(tok))
	}
	return tok, nil
}

func (o *options) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the Kubernetes API (use --kubeconfig or KUBECONFIG out of a cluster): %w", err)
	}
	cfg.UserAgent = "kubox-router/" + version.Get().GitVersion
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
