package router

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/audit"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/pathroute"
	"github.com/kubox-dev/kubox/internal/router/proxy"
)

// Defaults of Config, shared with cmd/kubox-router's flags.
const (
	DefaultMetricsAddr             = ":9090"
	DefaultHealthAddr              = ":8081"
	DefaultHeaderPort              = contract.DefaultAgentCompatibilityPort
	DefaultProxyTimeout            = 180 * time.Second
	DefaultMaxRequestBodyBytes     = 1 << 30
	DefaultMaxConnectionsPerClient = 64
	DefaultMaxInflightRequests     = 256
	DefaultMaxResponseHeaderBytes  = 64 << 10
	DefaultIdleTimeout             = 120 * time.Second
	DefaultClaimTokenMaxTTL        = 24 * time.Hour
	DefaultClaimTokenTTL           = time.Hour
	DefaultAuthCacheTTL            = 30 * time.Second
	DefaultUpstreamMaxRetries      = 3
	DefaultUpstreamRetryDelay      = 200 * time.Millisecond
	DefaultShutdownTimeout         = 30 * time.Second
	DefaultWakeTimeout             = 60 * time.Second
)

// DefaultHTTPAddr is where the router serves, contract.DefaultRouterPort on every address.
var DefaultHTTPAddr = ":" + strconv.Itoa(contract.DefaultRouterPort)

// Config is kubox-router's configuration; cmd/kubox-router fills it from flags of the same
// meaning. Start DefaultConfig and change what differs.
type Config struct {
	// HTTPAddr, MetricsAddr and HealthAddr are where Start listens ("0" or "": not at all, for
	// the metrics and health listeners). Serve ignores them.
	HTTPAddr, MetricsAddr, HealthAddr string
	// Namespace limits the router to sandboxes and claims of one namespace; empty: all.
	Namespace string
	// AgentTokenKey is the key the router shares with the controller: agent tokens are derived
	// from it and claim tokens are signed with it. Required, at least 32 bytes.
	AgentTokenKey []byte
	// SharedToken, when not empty, is a bearer token that opens every route.
	SharedToken []byte
	// AllowUnauthenticatedHeaderRouting admits header-routed requests (X-Sandbox-ID) without
	// credentials. Safe only when the router is reachable solely through kubectl port-forward.
	AllowUnauthenticatedHeaderRouting bool
	// PreviewDomain enables preview hosts "{port}-{id}.{PreviewDomain}"; empty: off.
	PreviewDomain string
	// E2BDomain serves E2B's control API on the host "api.{E2BDomain}" and envd's hosts
	// "{port}-{sandboxID}.{E2BDomain}" (internal/router/e2b); empty: off.
	E2BDomain string
	// E2BNamespace is where E2B's sandboxes (SandboxClaims) are; empty: the namespace of the API
	// key's ServiceAccount.
	E2BNamespace string
	// PathRoutingPrefix enables browser path routing, "{prefix}/{ns}/{name}/{port}/..." with a
	// session cookie (agent-sandbox's --path-routing-prefix); empty: off. See internal/router/pathroute.
	PathRoutingPrefix string
	// PathRoutingHost is the host name (no port) path routes are served on, and the only thing
	// served on it: sandboxes' pages get an origin apart from the dashboard's (/ui/, which keeps
	// the viewer's Kubernetes token in its origin's sessionStorage) and from the router's API.
	// Required with PathRoutingPrefix. See pathroute.go.
	PathRoutingHost string
	// PathRoutingRewriteResponses rewrites Location and Content-Location headers of path-routed
	// responses that point at the sandbox's own root so they stay under the prefix.
	PathRoutingRewriteResponses bool
	// ProxyTimeout bounds the wait for a sandbox's response headers, and caps X-Sandbox-Timeout.
	ProxyTimeout time.Duration
	// MaxRequestBodyBytes bounds request bodies (413 beyond); 0: unlimited.
	MaxRequestBodyBytes int64
	// MaxConnectionsPerClient bounds the requests one client IP has in flight at once (429
	// beyond), streams and WebSockets included; 0: unlimited.
	MaxConnectionsPerClient int
	// MaxInflightRequests bounds the requests the whole router has in flight at once (503
	// beyond), streams and WebSockets included; with MaxResponseHeaderBytes it bounds the memory
	// the proxy can be made to hold (see MemoryBound). 0: unlimited.
	MaxInflightRequests int
	// MaxResponseHeaderBytes bounds the response headers a sandbox may send (502 beyond): the
	// header block of HTTP/1.1 responses, upgrades and 1xx responses, the header list (and
	// trailers) of h2c responses.
	MaxResponseHeaderBytes int64
	// IdleTimeout closes client keep-alive connections idle for that long.
	IdleTimeout time.Duration
	// ClaimTokenMaxTTL is the longest lifetime of a minted claim token.
	ClaimTokenMaxTTL time.Duration
	// AllowLoopbackPodIP lets the router dial loopback, link-local, multicast and unspecified
	// pod IPs, which a real Pod never has (tests run their "pods" on 127.0.0.1).
	AllowLoopbackPodIP bool
	// AccessLog writes one JSON line per request (not for /healthz and /readyz) to Log.
	AccessLog bool
	// AuthCacheTTL is how long TokenReview and SubjectAccessReview answers are reused (a
	// rejected token's for at most authn.DefaultNegativeCacheTTL).
	AuthCacheTTL time.Duration
	// MaxBearerTokenBytes bounds the bearer tokens the router considers (401 beyond, before any
	// API call); 0: authn.DefaultMaxTokenBytes.
	MaxBearerTokenBytes int
	// TokenReviewBudget bounds the TokenReviews of tokens the router has not seen accepted
	// (429 with Retry-After beyond), overall and per client IP address.
	TokenReviewBudget authn.BudgetConfig
	// UpstreamMaxRetries and UpstreamRetryDelay: a failed dial to a sandbox is retried this many
	// times, waiting UpstreamRetryDelay, then twice as long each time. Only dials are retried.
	UpstreamMaxRetries int
	UpstreamRetryDelay time.Duration
	// ShutdownTimeout bounds the wait for requests in flight when Start or Serve stop.
	ShutdownTimeout time.Duration
	// WakeTimeout bounds how long a request for a suspended sandbox the router wakes waits for
	// the sandbox to be Ready (504 beyond; the sandbox goes on starting).
	WakeTimeout time.Duration
	// CORSAllowedOrigins are the web pages' origins (https://app.example.com) whose scripts may
	// call the agent API routes (/sandboxes/, /claims/) with a token, as @kubox/sdk/web does;
	// empty: none. See cors.go.
	CORSAllowedOrigins []string
	// UIMetricsURL, when not empty, is kubox-controller's Prometheus endpoint, which the
	// dashboard (/ui/) scrapes for its claim latency picture.
	UIMetricsURL string
	// AuditSinks, when not empty, receive a record of every request the router lets through to
	// a sandbox (internal/router/audit, docs/audit.md), through a queue AuditQueue bounds.
	AuditSinks []audit.Sink
	AuditQueue audit.QueueConfig
	// Log receives the router's messages and access log; nil: slog.Default().
	Log *slog.Logger
}

// DefaultConfig returns the configuration kubox-router has without flags (and without the
// required key).
func DefaultConfig() Config {
	return Config{
		HTTPAddr:                DefaultHTTPAddr,
		MetricsAddr:             DefaultMetricsAddr,
		HealthAddr:              DefaultHealthAddr,
		ProxyTimeout:            DefaultProxyTimeout,
		MaxRequestBodyBytes:     DefaultMaxRequestBodyBytes,
		MaxConnectionsPerClient: DefaultMaxConnectionsPerClient,
		MaxInflightRequests:     DefaultMaxInflightRequests,
		MaxResponseHeaderBytes:  DefaultMaxResponseHeaderBytes,
		IdleTimeout:             DefaultIdleTimeout,
		ClaimTokenMaxTTL:        DefaultClaimTokenMaxTTL,
		AccessLog:               true,
		AuthCacheTTL:            DefaultAuthCacheTTL,
		MaxBearerTokenBytes:     authn.DefaultMaxTokenBytes,
		TokenReviewBudget:       authn.DefaultBudgetConfig(),
		UpstreamMaxRetries:      DefaultUpstreamMaxRetries,
		UpstreamRetryDelay:      DefaultUpstreamRetryDelay,
		ShutdownTimeout:         DefaultShutdownTimeout,
		WakeTimeout:             DefaultWakeTimeout,
	}
}

// validate reports every setting that cannot work.
func (c *Config) validate() error {
	var errs []error
	if len(c.AgentTokenKey) < contract.MinAgentTokenKeyBytes {
		errs = append(errs, fmt.Errorf("the agent token key has %d bytes; it needs at least %d: give the key the controller "+
			"uses (--agent-token-key-file), or make one with: head -c 48 /dev/urandom | base64 > key", len(c.AgentTokenKey), contract.MinAgentTokenKeyBytes))
	}
	for name, d := range map[string]time.Duration{"proxy timeout": c.ProxyTimeout, "claim token max TTL": c.ClaimTokenMaxTTL,
		"wake timeout": c.WakeTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("the %s must be positive, not %s", name, d))
		}
	}
	if err := c.TokenReviewBudget.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxRequestBodyBytes < 0 || c.MaxConnectionsPerClient < 0 || c.MaxInflightRequests < 0 || c.UpstreamMaxRetries < 0 ||
		c.MaxBearerTokenBytes < 0 {
		errs = append(errs, errors.New("limits and retries cannot be negative (0 means unlimited or none)"))
	}
	if c.MaxResponseHeaderBytes < minResponseHeaderBytes || c.MaxResponseHeaderBytes > maxResponseHeaderBytes {
		errs = append(errs, fmt.Errorf("the response header limit is %d bytes; give --max-response-header-bytes from %d to %d",
			c.MaxResponseHeaderBytes, minResponseHeaderBytes, maxResponseHeaderBytes))
	}
	if err := pathroute.ValidatePrefix(c.PathRoutingPrefix); err != nil {
		errs = append(errs, err)
	}
	if err := pathroute.ValidateHost(c.PathRoutingPrefix, c.PathRoutingHost, c.PreviewDomain, c.E2BDomain); err != nil {
		errs = append(errs, err)
	}
	if c.PathRoutingRewriteResponses && c.PathRoutingPrefix == "" {
		errs = append(errs, errors.New("--path-routing-rewrite-responses needs --path-routing-prefix: without it no request is path-routed"))
	}
	if strings.ContainsAny(c.E2BDomain, ":/ ") || (c.E2BDomain != "" && c.E2BDomain == c.PreviewDomain) {
		errs = append(errs, fmt.Errorf("E2B domain %q must be a bare DNS domain such as e2b.example.com, other than the preview domain", c.E2BDomain))
	}
	for _, o := range c.CORSAllowedOrigins {
		if err := validateOrigin(o); err != nil {
			errs = append(errs, err)
		}
	}
	if strings.ContainsAny(c.PreviewDomain, ":/ ") {
		errs = append(errs, fmt.Errorf("preview domain %q must be a bare DNS domain such as preview.example.com", c.PreviewDomain))
	}
	return errors.Join(errs...)
}

// Bounds of MaxResponseHeaderBytes: below 4 KiB ordinary apps break; above 16 MiB the limit
// protects nothing.
const (
	minResponseHeaderBytes = 4 << 10
	maxResponseHeaderBytes = 16 << 20
)

// streamWindow is the HTTP/2 flow-control window the router grants per stream, to clients and
// to sandboxes (proxy.StreamWindow).
const streamWindow = proxy.StreamWindow

// maxRequestHeaderBytes bounds a client's request headers (431 beyond; Go's default is 1 MiB):
// room for a Kubernetes or OIDC token and a browser's cookies.
const maxRequestHeaderBytes = 64 << 10

// requestOverhead is what one request in flight holds besides its headers and h2 windows:
// ReverseProxy's 32 KiB copy buffer, the bufio buffers of the client's and the sandbox's
// connections (4 KiB each way), two goroutines' stacks and the request's structures.
const requestOverhead = 64 << 10

// headerCopies is how many times a response header block can be held at once for a request:
// the bytes read, the parsed strings, and the encoded copy an HTTP/2 client gets.
const headerCopies = 3

// PerRequestMemoryBound is the most one request in flight can make the router hold, however its
// sandbox and its client behave: its response headers (a few copies of MaxResponseHeaderBytes),
// its request headers (two copies of the server's 64 KiB bound), an HTTP/2 window each way, and
// fixed buffers.
func (c *Config) PerRequestMemoryBound() int64 {
	return headerCopies*c.MaxResponseHeaderBytes + 2*maxRequestHeaderBytes + 2*streamWindow + requestOverhead
}

// MemoryBound is the most memory the proxy's requests in flight can hold together:
// MaxInflightRequests × PerRequestMemoryBound; 0 when MaxInflightRequests is 0 (no bound). The
// router's total is this plus its baseline (the informer cache of Sandboxes and SandboxClaims,
// the Kubernetes clients, the Go runtime): docs/router.md states the figures.
func (c *Config) MemoryBound() int64 {
	return int64(c.MaxInflightRequests) * c.PerRequestMemoryBound()
}
