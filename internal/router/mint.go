package router

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

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
	if herr == nil && p.kind == principalClaim {
		herr = errorf(http.StatusForbidden, "a claim token cannot mint claim tokens; use a Kubernetes identity allowed to create sandboxclaims/connect")
	}
	if herr == nil {
		infoFrom(ctx).principal = p.name()
		herr = rt.authorize(ctx, p, access{namespace: ns, name: name, claim: true})
	}
	rt.recordDecision(herr)
	if herr != nil {
		return herr
	}
	claim, herr := rt.lookupClaim(ctx, ns, name)
	if herr != nil {
		return herr
	}
	if claim == nil {
		return errorf(http.StatusNotFound, "SandboxClaim %s/%s does not exist (or the router has not seen it yet); create it first", ns, name)
	}
	c := claimtoken.Claims{Namespace: ns, Claim: name, UID: claim.UID, Expiry: rt.now().Add(ttl).Unix()}
	tok, err := claimtoken.Mint(rt.cfg.AgentTokenKey, c)
	if err != nil {
		return errorf(http.StatusInternalServerError, "minting a claim token: %v", err)
	}
	writeJSON(w, http.StatusOK, mintResponse{Token: tok, ExpiresAt: c.ExpiresAt().Format(time.RFC3339), Claim: name, Namespace: ns})
	return nil
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
