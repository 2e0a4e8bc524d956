package e2b

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
	"github.com/kubox-dev/kubox/internal/router/httperr"
	"github.com/kubox-dev/kubox/internal/router/metrics"
)

// E2B's SDKs address two kinds of host under their domain (E2B_DOMAIN): "api.{domain}", the
// control API, which is their default API URL, and "{port}-{sandboxID}.{domain}", a port of a
// sandbox (envd on contract.E2BEnvdPort). With Config.Domain set the router serves both, so an
// E2B program needs only E2B_DOMAIN and E2B_API_KEY changed (docs/e2b.md).
const e2bAPIHostLabel = "api"

// ParseHost says what host is under domain: E2B's control API (api), or port of sandbox id; ok
// is false for any other host, and for every host when domain is empty.
func ParseHost(domain, host string) (api bool, port int, id string, ok bool) {
	if domain == "" {
		return false, 0, "", false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, found := strings.CutSuffix(strings.ToLower(host), "."+strings.ToLower(domain))
	if !found || label == "" || strings.Contains(label, ".") {
		return false, 0, "", false
	}
	if label == e2bAPIHostLabel {
		return true, 0, "", true
	}
	p, id, found := strings.Cut(label, "-")
	port, err := strconv.Atoi(p)
	if !found || err != nil || port < 1 || port > 65535 || id == "" {
		return false, 0, "", false
	}
	return false, port, id, true
}

// sandboxDomain is the sandbox domain E2B's SDKs are told to use (the "domain" of a sandbox):
// domain, with the port the client reached the API on when its Host names one, so that
// "{port}-{id}.{domain}" reaches this router too when it listens on a port other than 443.
func sandboxDomain(domain string, r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" && port != "443" {
		return net.JoinHostPort(domain, port)
	}
	return domain
}

// e2bError is the JSON of every error of E2B's API: {"code", "message"}.
type e2bError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func writeE2BError(w http.ResponseWriter, herr *httperr.Error) {
	if herr.Code == http.StatusTooManyRequests || herr.Code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(max(herr.RetryAfter, 1)))
	}
	httperr.WriteJSON(w, herr.Code, e2bError{Code: herr.Code, Message: herr.Msg})
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
func e2bKey(r *http.Request) (string, *httperr.Error) {
	key := strings.TrimSpace(r.Header.Get(contract.E2BAPIKeyHeader))
	if key == "" {
		tok, err := authn.BearerHeader(r.Header)
		if err != nil {
			return "", httperr.Errorf(http.StatusUnauthorized, "%v", err)
		}
		return tok, nil
	}
	hexed, ok := strings.CutPrefix(key, contract.E2BAPIKeyPrefix)
	if !ok {
		return key, nil
	}
	b, err := hex.DecodeString(hexed)
	if err != nil {
		return "", httperr.Errorf(http.StatusUnauthorized, "the API key starts with %s but the rest is not hex: give %s followed by the hex encoding "+
			"of a Kubernetes token (printf %%s \"$TOKEN\" | xxd -p | tr -d '\\n')", contract.E2BAPIKeyPrefix, contract.E2BAPIKeyPrefix)
	}
	return string(b), nil
}

// authenticateE2B checks the request's API key with a TokenReview, as every Kubernetes token
// the router sees, and decides the caller's namespace. Claim tokens and the shared token name no
// Kubernetes identity to act as, so they open no control API.
func (a *API) authenticateE2B(ctx context.Context, r *http.Request) (*e2bCaller, *httperr.Error) {
	tok, herr := e2bKey(r)
	if herr != nil {
		return nil, herr
	}
	const how = "send a Kubernetes token (a ServiceAccount's, from an administrator) as the API key: E2B_API_KEY=e2b_<hex of the token>"
	switch {
	case tok == "":
		return nil, httperr.Errorf(http.StatusUnauthorized, "the request has no API key; %s", how)
	case strings.HasPrefix(tok, claimtoken.Prefix) || a.deps.IsSharedToken(tok):
		return nil, httperr.Errorf(http.StatusUnauthorized, "a claim token or the router's shared token is no API key: it names no Kubernetes identity; %s", how)
	}
	u, herr := a.deps.ReviewToken(ctx, r, tok, "API key", func() string { return how })
	if herr != nil {
		return nil, herr
	}
	c := &e2bCaller{user: u, token: tok, namespace: a.cfg.Namespace}
	if c.namespace == "" {
		c.namespace = authn.ServiceAccountNamespace(u.Name)
	}
	if c.namespace == "" {
		return nil, httperr.Errorf(http.StatusForbidden, "%s is no ServiceAccount and the router has no --e2b-namespace: it cannot tell where your sandboxes are", u.Name)
	}
	if herr := a.deps.CheckNamespace(c.namespace); herr != nil {
		return nil, herr
	}
	return c, nil
}

// callerTokenKey carries the caller's token to callerTransport.
type callerTokenKey struct{}

// NewClient returns the client of the control API: the API server's address and CA from
// restConfig without its credentials, and on every request (watches too: waitE2BSnapshot) the
// bearer token of the caller the request's context carries (withCaller). So one client (and one connection pool) serves every
// caller, each with their own rights.
func NewClient(restConfig *rest.Config, mapper client.Options) (client.WithWatch, error) {
	cfg := rest.AnonymousClientConfig(restConfig)
	cfg.QPS, cfg.Burst = restConfig.QPS, restConfig.Burst
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return callerTransport{next} })
	c, err := client.NewWithWatch(cfg, mapper)
	if err != nil {
		return nil, fmt.Errorf("creating the E2B API's Kubernetes client: %w", err)
	}
	return c, nil
}

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
func (a *API) recordE2BDecision(herr *httperr.Error) {
	if herr != nil && herr.Code != http.StatusUnauthorized {
		a.deps.Metrics.AuthzDecisions.WithLabelValues(metrics.DecisionError).Inc()
		return
	}
	a.deps.RecordDecision(herr)
}
