package router

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
)

// mintRequest is the optional body of POST /v1/claims/{ns}/{name}/token.
type mintRequest struct {
	// TTLSeconds is the token's lifetime; 0 or absent: DefaultClaimTokenTTL (capped by the
	// router's maximum).
	TTLSeconds int64 `json:"ttlSeconds,omitempty"`
}

// mintResponse is its answer.
type mintResponse struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
	Claim     string `json:"claim"`
	Namespace string `json:"namespace"`
}

// serveMint mints a claim token for a Kubernetes identity (or the shared token's holder) that
// may connect to the claim. A claim token cannot mint another: it would outlive its expiry.
func (rt *Router) serveMint(w http.ResponseWriter, r *http.Request) {
	info := infoFrom(r.Context())
	info.route = "mint"
	ns, name, herr := parseMintPath(r)
	if herr == nil {
		info.namespace, info.name = ns, name
		herr = rt.mint(w, r, ns, name)
	}
	if herr != nil {
		writeError(w, herr)
	}
}

func (rt *Router) mint(w http.ResponseWriter, r *http.Request, ns, name string) *httpError {
	if !rt.synced.Load() {
		return errorf(http.StatusServiceUnavailable, "the router is still loading SandboxClaims from the Kubernetes API; retry shortly")
	}
	ttl, herr := rt.mintTTL(r)
	if herr != nil {
		return herr
	}
	ctx := r.Context()
	p, herr := rt.authenticate(ctx, r, false)
	if herr == nil {
		infoFrom(ctx).principal = p.name()
		herr = rt.authorizeMint(ctx, p, ns, name)
	}
	rt.recordDecision(herr)
	if herr != nil {
		return herr
	}
	tok, c, herr := rt.mintClaimToken(ctx, p, ns, name, rt.now().Add(ttl))
	if herr != nil {
		return herr
	}
	writeJSON(w, http.StatusOK, mintResponse{Token: tok, ExpiresAt: c.ExpiresAt().Format(time.RFC3339), Claim: name, Namespace: ns})
	return nil
}

// mintClaimToken is the one way the router mints a claim token, for every path that hands one
// out (POST /v1/claims/.../token, and E2B's create, getInfo, connect and resume): p must be
// allowed to connect to the claim (authorizeMint), and then the claim ns/name must exist in the
// router's cache; the token names its UID and expires at expiry. Reading a claim (get) is never
// enough: a token runs commands in the claim's sandbox.
func (rt *Router) mintClaimToken(ctx context.Context, p *principal, ns, name string, expiry time.Time) (string, claimtoken.Claims, *httpError) {
	if herr := rt.authorizeMint(ctx, p, ns, name); herr != nil {
		return "", claimtoken.Claims{}, herr
	}
	claim, herr := rt.lookupClaim(ctx, ns, name)
	if herr != nil {
		return "", claimtoken.Claims{}, herr
	}
	if claim == nil {
		return "", claimtoken.Claims{}, errorf(http.StatusNotFound,
			"SandboxClaim %s/%s does not exist (or the router has not seen it yet); create it first", ns, name)
	}
	c := claimtoken.Claims{Namespace: ns, Claim: name, UID: claim.UID, Expiry: expiry.Unix()}
	tok, err := claimtoken.Mint(rt.cfg.AgentTokenKey, c)
	if err != nil {
		return "", claimtoken.Claims{}, errorf(http.StatusInternalServerError, "minting a claim token for SandboxClaim %s/%s: %v", ns, name, err)
	}
	return tok, c, nil
}

// authorizeMint decides whether p may have a claim token for claim ns/name: a Kubernetes identity
// RBAC allows to create sandboxclaims/connect on it, or the shared token's holder. A claim token
// cannot mint another: it would outlive its expiry.
func (rt *Router) authorizeMint(ctx context.Context, p *principal, ns, name string) *httpError {
	if p.kind == principalClaim || p.kind == principalSession {
		return errorf(http.StatusForbidden, "a claim token or browser session cannot mint claim tokens; use a Kubernetes identity "+
			"allowed to create sandboxclaims/connect (group %s) on SandboxClaim %s/%s", extv1beta1.GroupVersion.Group, ns, name)
	}
	return rt.authorize(ctx, p, access{namespace: ns, name: name, claim: true})
}

func parseMintPath(r *http.Request) (ns, name string, herr *httpError) {
	if r.Method != http.MethodPost {
		return "", "", errorf(http.StatusMethodNotAllowed, "minting a claim token takes POST, not %s", r.Method)
	}
	parts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, mintPrefix), mintSuffix), "/")
	if len(parts) != 2 || len(validation.IsDNS1123Label(parts[0])) > 0 || len(validation.IsDNS1123Subdomain(parts[1])) > 0 {
		return "", "", errorf(http.StatusBadRequest, "the path %q is not /v1/claims/{namespace}/{claim}/token", clip(r.URL.Path))
	}
	return parts[0], parts[1], nil
}

// mintTTL reads the optional body {"ttlSeconds": N}.
func (rt *Router) mintTTL(r *http.Request) (time.Duration, *httpError) {
	ttl := min(DefaultClaimTokenTTL, rt.cfg.ClaimTokenMaxTTL)
	if r.Body == nil {
		return ttl, nil
	}
	var req mintRequest
	err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req)
	switch {
	case errors.Is(err, io.EOF):
		return ttl, nil
	case err != nil:
		return 0, errorf(http.StatusBadRequest, "the body is not JSON like {\"ttlSeconds\": 3600}: %v", err)
	case req.TTLSeconds < 0:
		return 0, errorf(http.StatusBadRequest, "ttlSeconds %d is negative", req.TTLSeconds)
	case req.TTLSeconds == 0:
		return ttl, nil
	}
	if d := time.Duration(req.TTLSeconds) * time.Second; d <= rt.cfg.ClaimTokenMaxTTL && req.TTLSeconds <= int64(rt.cfg.ClaimTokenMaxTTL/time.Second) {
		return d, nil
	}
	return 0, errorf(http.StatusBadRequest, "ttlSeconds %d is longer than the router's maximum of %d (--claim-token-max-ttl)",
		req.TTLSeconds, int64(rt.cfg.ClaimTokenMaxTTL/time.Second))
}
