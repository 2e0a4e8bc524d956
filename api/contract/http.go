package contract

import "net/http"

// Authentication of requests to kubox-agent and kubox-router.
const (
	// AuthorizationHeader carries "Bearer <token>" on every request to kubox-agent (the sandbox's
	// agent token) and kubox-router (a Kubernetes token, a claim token or the router's shared
	// token). Written by the SDK, the CLI and kubox-router; read by kubox-agent and kubox-router.
	AuthorizationHeader = "Authorization"
	// BearerScheme is the only authentication scheme kubox-agent and kubox-router accept.
	BearerScheme = "Bearer"
	// RouterTokenCookie carries a bearer token to kubox-router on preview hosts, where browsers
	// cannot set headers. Written by browsers (set by the user), read and stripped by
	// kubox-router, which never lets a sandbox set it.
	RouterTokenCookie = "kubox-token"
)

// Headers of kubox-router's header routing, the routing agent-sandbox's clients use. Written by
// those clients (and kubox's tests); read, and stripped before the request reaches the sandbox,
// by kubox-router.
const (
	// SandboxIDHeader names the sandbox a request is for.
	SandboxIDHeader = "X-Sandbox-Id"
	// SandboxNamespaceHeader names the sandbox's namespace; default: the router's namespace.
	SandboxNamespaceHeader = "X-Sandbox-Namespace"
	// SandboxPortHeader names the sandbox's port; default DefaultAgentCompatibilityPort.
	SandboxPortHeader = "X-Sandbox-Port"
	// SandboxTimeoutHeader bounds, in seconds, the wait for the sandbox's response headers.
	SandboxTimeoutHeader = "X-Sandbox-Timeout"
	// SandboxHeaderPrefix starts every header above; kubox-router strips all headers with it.
	SandboxHeaderPrefix = "X-Sandbox-"
)

// BearerTransport is the client side of the bearer authentication kubox-agent and kubox-router
// require: an http.RoundTripper that adds "Authorization: Bearer <Token>" to every request,
// unary and streaming calls alike, and sends it through Base (http.DefaultTransport when nil).
// Use it as the Transport of the http.Client given to the agent's Connect clients, or for plain
// /files/ requests. The SDK uses it for claim and shared tokens.
type BearerTransport struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper. It does not change the caller's request.
func (t *BearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	r = r.Clone(r.Context())
	r.Header.Set(AuthorizationHeader, BearerScheme+" "+t.Token)
	return base.RoundTrip(r)
}

// BearerClient returns an http.Client whose requests carry token.
func BearerClient(token string) *http.Client {
	return &http.Client{Transport: &BearerTransport{Token: token}}
}
