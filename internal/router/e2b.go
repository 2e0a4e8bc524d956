package router

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// E2B's SDKs address two kinds of host under their domain (E2B_DOMAIN): "api.{domain}", the
// control API, which is their default API URL, and "{port}-{sandboxID}.{domain}", a port of a
// sandbox (envd on contract.E2BEnvdPort). With Config.E2BDomain set the router serves both, so
// an E2B program needs only E2B_DOMAIN and E2B_API_KEY changed (docs/e2b.md).
const e2bAPIHostLabel = "api"

// kindE2BAPI is the control API's route in the access log; sandbox hosts are logged as the
// claim route they are.
const kindE2BAPI = "e2b-api"

// e2bHost says what an E2B host is: the control API (api), or port of sandbox id.
func (rt *Router) e2bHost(host string) (api bool, port int, id string, ok bool) {
	d := rt.cfg.E2BDomain
	if d == "" {
		return false, 0, "", false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, found := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(d))
	if !found || label == "" || strings.Contains(label, ".") {
		return false, 0, "", false
	}
	if label == e2bAPIHostLabel {
		return true, 0, "", true
	}
	p, id, found := strings.Cut(label, "-")
	port, err := parsePortHeader(p)
	if !found || err != nil || id == "" {
		return false, 0, "", false
	}
	return false, port, id, true
}

// e2bDomain is the sandbox domain E2B's SDKs are told to use (the "domain" of a sandbox): the
// router's, with the port the client reached the API on when its Host names one, so that
// "{port}-{id}.{domain}" reaches this router too when it listens on a port other than 443.
func (rt *Router) e2bDomain(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" && port != "443" {
		return net.JoinHostPort(rt.cfg.E2BDomain, port)
	}
	return rt.cfg.E2BDomain
}

// serveE2B serves r when it is for one of E2B's hosts, and reports whether it was.
func (rt *Router) serveE2B(w http.ResponseWriter, r *http.Request) bool {
	api, port, id, ok := rt.e2bHost(r.Host)
	switch {
	case !ok:
		return false
	case api:
		infoFrom(r.Context()).route = kindE2BAPI
		rt.serveE2BAPI(w, r)
	default:
		rt.serveE2BSandbox(w, r, port, id)
	}
	return true
}

// e2bError is the JSON of every error of E2B's API: {"code", "message"}.
type e2bError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeE2BError(w http.ResponseWriter, herr *httpError) {
	if herr.code == http.StatusTooManyRequests || herr.code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", itoa(max(herr.retryAfter, 1)))
	}
	writeJSON(w, herr.code, e2bError{Code: herr.code, Message: herr.msg})
}

// e2bCaller is who calls E2B's control API: a Kubernetes identity, whose token the router acts
// with, never with its own rights.
type e2bCaller struct {
	user  *authn.User
	token string
	// namespace is where the caller's sandboxes are.
	namespace string
}

// e2bKey returns the Kubernetes token of a control API request: the X-API-Key header, either
// the token itself or contract.E2BAPIKeyPrefix and its hex encoding (the form E2B's JS SDK
// accepts), else `Authorization: Bearer` (the SDKs' E2B_ACCESS_TOKEN).
func e2bKey(r *http.Request) (string, *httpError) {
	key := strings.TrimSpace(r.Header.Get(contract.E2BAPIKeyHeader))
	if key == "" {
		tok, _, herr := bearer(r, false)
		return tok, herr
	}
	hexed, ok := strings.CutPrefix(key, contract.E2BAPIKeyPrefix)
	if !ok {
		return key, nil
	}
	b, err := hex.DecodeString(hexed)
	if err != nil {
		return "", errorf(http.StatusUnauthorized, "the API key starts with %s but the rest is not hex: give %s followed by the hex encoding "+
			"of a Kubernetes token (printf %%s \"$TOKEN\" | xxd -p | tr -d '\\n')", contract.E2BAPIKeyPrefix, contract.E2BAPIKeyPrefix)
	}
	return string(b), nil
}

// authenticateE2B checks the request's API key with a TokenReview, as every Kubernetes token
// the router sees, and decides the caller's namespace. Claim tokens and the shared token name no
// Kubernetes identity to act as, so they open no control API.
func (rt *Router) authenticateE2B(ctx context.Context, r *http.Request) (*e2bCaller, *httpError) {
	tok, herr := e2bKey(r)
	if herr != nil {
		return nil, herr
	}
	const how = "send a Kubernetes token (a ServiceAccount's, from an administrator) as the API key: E2B_API_KEY=e2b_<hex of the token>"
	switch {
	case tok == "":
		return nil, errorf(http.StatusUnauthorized, "the request has no API key; %s", how)
	case strings.HasPrefix(tok, claimtoken.Prefix) || rt.shared.Matches(tok):
		return nil, errorf(http.StatusUnauthorized, "a claim token or the router's shared token is no API key: it names no Kubernetes identity; %s", how)
	}
	u, herr := rt.reviewKubeToken(ctx, r, tok, "API key", func() string { return how })
	if herr != nil {
		return nil, herr
	}
	c := &e2bCaller{user: u, token: tok, namespace: rt.cfg.E2BNamespace}
	if c.namespace == "" {
		c.namespace = authn.ServiceAccountNamespace(u.Name)
	}
	if c.namespace == "" {
		return nil, errorf(http.StatusForbidden, "%s is no ServiceAccount and the router has no --e2b-namespace: it cannot tell where your sandboxes are", u.Name)
	}
	if herr := rt.checkNamespace(c.namespace); herr != nil {
		return nil, herr
	}
	return c, nil
}

// callerTokenKey carries the caller's token to callerTransport.
type callerTokenKey struct{}

// newE2BClient returns the client of the control API: the API server's address and CA from
// restConfig without its credentials, and on every request the bearer token of the caller the
// request's context carries (withCaller). So one client (and one connection pool) serves every
// caller, each with their own rights.
func newE2BClient(restConfig *rest.Config, mapper client.Options) (client.Client, error) {
	cfg := rest.AnonymousClientConfig(restConfig)
	cfg.QPS, cfg.Burst = restConfig.QPS, restConfig.Burst
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return callerTransport{next} })
	c, err := client.New(cfg, mapper)
	if err != nil {
		return nil, fmt.Errorf("creating the E2B API's Kubernetes client: %w", err)
	}
	return c, nil
}

// principal is the caller as the router's own authorization sees it (authorizeMint).
func (c *e2bCaller) principal() *principal { return &principal{kind: principalUser, user: c.user} }

func withCaller(ctx context.Context, c *e2bCaller) context.Context {
	return context.WithValue(ctx, callerTokenKey{}, c.token)
}

// callerTransport sends the caller's token; a request without one goes without credentials.
type callerTransport struct{ next http.RoundTripper }

func (t callerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, _ := r.Context().Value(callerTokenKey{}).(string)
	if tok == "" {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+tok)
	return t.next.RoundTrip(r)
}

// recordE2BDecision counts a control API request's authentication like the proxy's.
func (rt *Router) recordE2BDecision(herr *httpError) {
	if herr != nil && herr.code != http.StatusUnauthorized {
		rt.metrics.AuthzDecisions.WithLabelValues(metrics.DecisionError).Inc()
		return
	}
	rt.recordDecision(herr)
}
