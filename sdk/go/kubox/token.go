package kubox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// claimTokenRequest and claimTokenResponse are the bodies of the router's
// POST /v1/claims/{ns}/{name}/token.
type claimTokenRequest struct {
	TTLSeconds int64 `json:"ttlSeconds,omitempty"`
}

type claimTokenResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// MintClaimToken asks the router for a claim token: a bearer token that reaches only the
// sandbox of claim namespace/claimName, only while that claim exists, until it expires (after
// ttl, or the router's default when ttl is 0). Give it to a program that should use the sandbox
// but has no Kubernetes credentials, as Options.Token. The caller's identity needs RBAC create on
// sandboxclaims/connect (extensions.agents.x-k8s.io) for the claim. It needs the router
// (not ConnectDirect).
func (c *Client) MintClaimToken(ctx context.Context, namespace, claimName string, ttl time.Duration) (string, time.Time, error) {
	if namespace == "" {
		namespace = c.opts.Namespace
	}
	obj := "claim " + namespace + "/" + claimName
	router, hc, err := c.routerBase(ctx)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("kubox: minting a token for %s: %w", obj, err)
	}
	body, err := json.Marshal(claimTokenRequest{TTLSeconds: int64(ttl / time.Second)})
	if err != nil {
		return "", time.Time{}, err
	}
	u := router + "/v1/claims/" + url.PathEscape(namespace) + "/" + url.PathEscape(claimName) + "/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("kubox: minting a token for %s: %w", obj, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", time.Time{}, wrapCallError(err, obj)
	}
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, errorFromResponse(resp, obj)
	}
	defer func() { _ = resp.Body.Close() }()
	var out claimTokenResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Token == "" {
		return "", time.Time{}, fmt.Errorf("kubox: the router's answer to the token request for %s is not a token: %v", obj, err)
	}
	return out.Token, out.ExpiresAt, nil
}
