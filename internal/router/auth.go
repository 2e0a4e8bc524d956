package router

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
	"github.com/kubox-dev/kubox/internal/router/metrics"
	"github.com/kubox-dev/kubox/internal/router/pathroute"
)

// tokenCookie carries a bearer token on preview hosts, where browsers cannot set headers.
const tokenCookie = contract.RouterTokenCookie

// The kinds of principal, as the access log names them.
const (
	principalShared    = "shared-token"
	principalClaim     = "claim-token"
	principalUser      = "kubernetes"
	principalAnonymous = "anonymous"
)

// principal is who sent a request.
type principal struct {
	kind  string
	user  *authn.User        // principalUser
	claim *claimtoken.Claims // principalClaim
	// session is the browser session of principalSession (pathroute.Grant).
	session *pathroute.Grant
}

// name is how the access log shows the principal; never a token.
func (p *principal) name() string {
	switch {
	case p == nil:
		return ""
	case p.user != nil:
		return p.user.Name
	case p.claim != nil:
		return "claim:" + p.claim.Namespace + "/" + p.claim.Claim
	case p.session != nil:
		return "session:" + p.session.Subject
	}
	return p.kind
}

// bearer returns the request's bearer token, or "" when there is none; with cookie, also the
// kubox-token cookie, and then fromCookie says where the token came from. More than one
// Authorization header, another scheme, or more than one kubox-token cookie is an error.
func bearer(r *http.Request, cookie bool) (tok string, fromCookie bool, herr *httpError) {
	tok, err := authn.BearerHeader(r.Header)
	if err != nil {
		return "", false, errorf(http.StatusUnauthorized, "%v", err)
	}
	if tok != "" {
		return tok, false, nil
	}
	if cookie {
		// Two cookies of the name mean someone else set one (for a parent domain, say): the
		// router will not guess which is the user's.
		switch cs := r.CookiesNamed(tokenCookie); {
		case len(cs) > 1:
			return "", true, errorf(http.StatusUnauthorized, "the request has %d %s cookies; a page or another host set one besides "+
				"yours: clear this site's cookies and set %s again (host-only: no Domain attribute)", len(cs), tokenCookie, tokenCookie)
		case len(cs) == 1 && cs[0].Value != "":
			return cs[0].Value, true, nil
		}
	}
	return "", false, nil
}

// authenticate finds who sent r: the shared token, a claim token, or a Kubernetes identity.
// With cookie (preview hosts), a token from the kubox-token cookie is refused on requests other
// sites' pages sent (checkCookieSite).
func (rt *Router) authenticate(ctx context.Context, r *http.Request, cookie bool) (*principal, *httpError) {
	tok, fromCookie, herr := bearer(r, cookie)
	if herr != nil {
		return nil, herr
	}
	if fromCookie {
		if herr := checkCookieSite(r); herr != nil {
			return nil, herr
		}
	}
	if tok == "" {
		return nil, errorf(http.StatusUnauthorized, "the request has no credentials; %s", rt.acceptedCredentials())
	}
	if rt.shared.Matches(tok) {
		return &principal{kind: principalShared}, nil
	}
	if strings.HasPrefix(tok, claimtoken.Prefix) {
		// A claim token is checked here and never sent to the API server, valid or not.
		c, err := claimtoken.Verify(rt.cfg.AgentTokenKey, tok, rt.now())
		if err != nil {
			rt.metrics.TokenRejections.WithLabelValues(metrics.RejectionClaimToken).Inc()
			return nil, errorf(http.StatusUnauthorized, "%v", err)
		}
		return &principal{kind: principalClaim, claim: &c}, nil
	}
	u, herr := rt.reviewKubeToken(ctx, r, tok, "bearer token", rt.acceptedCredentials)
	if herr != nil {
		return nil, herr
	}
	return &principal{kind: principalUser, user: u}, nil
}

// reviewKubeToken checks a Kubernetes token's size and has the API server review it (the
// reviewer caches and rate-limits): 401 for a token it refuses, 429 when the review is limited,
// 503 when it failed. what names the credential in messages; how says what to send instead (built only for a refusal).
func (rt *Router) reviewKubeToken(ctx context.Context, r *http.Request, tok, what string, how func() string) (*authn.User, *httpError) {
	if merr := authn.CheckToken(tok, rt.cfg.MaxBearerTokenBytes); merr != nil {
		rt.metrics.TokenRejections.WithLabelValues(merr.Reason).Inc()
		return nil, errorf(http.StatusUnauthorized, "%v; %s", merr, how())
	}
	u, why, err := rt.reviewer.Authenticate(ctx, tok, clientIP(r))
	if lerr := (*authn.LimitedError)(nil); errors.As(err, &lerr) {
		rt.metrics.TokenReviewsLimited.WithLabelValues(lerr.Scope).Inc()
		herr := errorf(http.StatusTooManyRequests, "the router did not review the %s: %v", what, lerr)
		herr.RetryAfter = lerr.RetryAfterSeconds()
		return nil, herr
	}
	if err != nil {
		return nil, errorf(http.StatusServiceUnavailable, "%v; retry shortly", err)
	}
	if u == nil {
		msg := "the Kubernetes API does not accept the " + what
		if why != "" {
			msg += " (" + why + ")"
		}
		return nil, errorf(http.StatusUnauthorized, "%s; %s", msg, how())
	}
	return u, nil
}

// acceptedCredentials tells a client what it may send.
func (rt *Router) acceptedCredentials() string {
	s := "send 'Authorization: Bearer <token>' with a Kubernetes token (a ServiceAccount's or a user's) that RBAC allows to " +
		"create sandboxes/connect (group agents.x-k8s.io) or sandboxclaims/connect (group extensions.agents.x-k8s.io), " +
		"or a claim token from POST /v1/claims/{namespace}/{claim}/token"
	if rt.shared.Configured() {
		s += ", or the router's shared token"
	}
	return s
}

// access is what a request asks to reach: a sandbox, or a claim (and then its sandbox).
type access struct {
	namespace, name string
	claim           bool
}

// authorize decides whether p may reach a. For a claim token the claim must still exist with
// the token's UID, and a must be that claim or the sandbox bound to it.
func (rt *Router) authorize(ctx context.Context, p *principal, a access) *httpError {
	switch p.kind {
	case principalShared, principalAnonymous:
		return nil
	case principalClaim:
		return rt.authorizeClaimToken(ctx, p.claim, a)
	case principalSession:
		return p.session.Authorize(a.namespace, a.name, a.claim)
	}
	attrs := authn.Attributes{Verb: "create", Group: sandboxv1beta1.GroupVersion.Group, Resource: "sandboxes",
		Subresource: "connect", Namespace: a.namespace, Name: a.name}
	if a.claim {
		attrs.Group, attrs.Resource = extv1beta1.GroupVersion.Group, "sandboxclaims"
	}
	d, err := rt.reviewer.Authorize(ctx, p.user, attrs)
	if err != nil {
		return errorf(http.StatusServiceUnavailable, "%v; retry shortly", err)
	}
	if !d.Allowed {
		return errorf(http.StatusForbidden, "%s may not connect to %s %s/%s: RBAC must allow verb create on %s/connect (group %s) "+
			"for it, e.g. a Role with resourceNames [%s]", p.user.Name, strings.TrimSuffix(attrs.Resource, "es"), a.namespace, a.name,
			attrs.Resource, attrs.Group, a.name)
	}
	return nil
}

func (rt *Router) authorizeClaimToken(ctx context.Context, c *claimtoken.Claims, a access) *httpError {
	claim, herr := rt.lookupClaim(ctx, c.Namespace, c.Claim)
	if herr != nil {
		return herr
	}
	if claim == nil || claim.UID != c.UID {
		return errorf(http.StatusUnauthorized, "the claim token was minted for SandboxClaim %s/%s, which no longer exists (it was deleted, "+
			"or recreated under the same name); claim again and mint a new token", c.Namespace, c.Claim)
	}
	if a.namespace == c.Namespace {
		if a.claim && a.name == c.Claim {
			return nil
		}
		if !a.claim && a.name != "" && a.name == claim.Status.Sandbox.Name {
			return nil
		}
	}
	what := "sandbox"
	if a.claim {
		what = "claim"
	}
	return errorf(http.StatusForbidden, "the claim token opens only SandboxClaim %s/%s and the sandbox bound to it (%q), not %s %s/%s",
		c.Namespace, c.Claim, claim.Status.Sandbox.Name, what, a.namespace, a.name)
}

// recordDecision counts the outcome of authentication and authorization.
func (rt *Router) recordDecision(herr *httpError) {
	var d string
	switch {
	case herr == nil:
		d = metrics.DecisionAllow
	case herr.Code == http.StatusUnauthorized:
		d = metrics.DecisionUnauthenticated
	case herr.Code == http.StatusForbidden:
		d = metrics.DecisionDeny
	default:
		d = metrics.DecisionError
	}
	rt.metrics.AuthzDecisions.WithLabelValues(d).Inc()
}
