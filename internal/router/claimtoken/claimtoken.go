// Package claimtoken mints and verifies the claim tokens kubox-router hands out: bearer tokens
// that open one SandboxClaim's sandbox, for a limited time, and only while that very claim (same
// UID) exists.
//
// A token is "kbx1.<payload>.<signature>": the payload is the unpadded base64url encoding of the
// JSON {"ns","claim","uid","exp"}, the signature the unpadded base64url encoding of
// HMAC-SHA256(key, domain || "kbx1." || payload). The key is the one the router shares with the
// controller for agent tokens (api/contract.DeriveAgentToken); a domain string of its own keeps the two
// kinds of MAC apart, so no claim token is ever an agent token and the reverse.
//
// Verify checks only the signature and the expiry. Whether the claim still exists with that UID,
// and which sandbox it is bound to, is the router's business: it looks at its informer cache.
package claimtoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Prefix starts every claim token; it tells the router which kind of credential it holds.
const Prefix = "kbx1."

// domain separates claim-token MACs from any other use of the key.
const domain = "kubox-router-claim-token/v1\x00"

// maxTokenBytes bounds what Verify decodes: real tokens are well under 1 KiB.
const maxTokenBytes = 4096

// Errors of Verify. Messages are for people; none repeats the token.
var (
	ErrMalformed = errors.New("the claim token is malformed: it is not kbx1.<payload>.<signature>")
	ErrSignature = errors.New("the claim token's signature does not match: it was not minted by this router's key, or was altered")
	ErrExpired   = errors.New("the claim token has expired: mint a new one with POST /v1/claims/{namespace}/{claim}/token")
)

// Claims is what a token grants: the claim ns/claim with UID uid, until exp.
type Claims struct {
	// Namespace and Claim name the SandboxClaim.
	Namespace string `json:"ns"`
	Claim     string `json:"claim"`
	// UID is the claim's UID when the token was minted; a recreated claim has another.
	UID types.UID `json:"uid"`
	// Expiry is in Unix seconds.
	Expiry int64 `json:"exp"`
}

// ExpiresAt is the token's expiry as a time.
func (c Claims) ExpiresAt() time.Time { return time.Unix(c.Expiry, 0).UTC() }

// Mint returns the token for c signed with key.
func Mint(key []byte, c Claims) (string, error) {
	if c.Namespace == "" || c.Claim == "" || c.UID == "" || c.Expiry == 0 {
		return "", fmt.Errorf("a claim token needs a namespace, claim name, UID and expiry; got %+v", c)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return Prefix + payload + "." + sign(key, payload), nil
}

// Verify checks tok's signature under key and its expiry at now, and returns what it grants.
func Verify(key []byte, tok string, now time.Time) (Claims, error) {
	payload, sig, err := split(tok)
	if err != nil {
		return Claims{}, err
	}
	if !hmac.Equal([]byte(sign(key, payload)), []byte(sig)) {
		return Claims{}, ErrSignature
	}
	return decode(payload, now)
}

// Peek returns what tok says it grants, checking its form and expiry but not its signature: for
// a client that holds a claim token and must know which claim it names (to build the route, or
// name it in messages). Only the router, which has the key, can tell whether it is genuine, and
// it checks every request.
func Peek(tok string, now time.Time) (Claims, error) {
	payload, _, err := split(tok)
	if err != nil {
		return Claims{}, err
	}
	return decode(payload, now)
}

// split cuts tok into its payload and signature.
func split(tok string) (payload, sig string, err error) {
	if len(tok) > maxTokenBytes {
		return "", "", ErrMalformed
	}
	rest, ok := strings.CutPrefix(tok, Prefix)
	if !ok {
		return "", "", ErrMalformed
	}
	payload, sig, ok = strings.Cut(rest, ".")
	if !ok || payload == "" || sig == "" {
		return "", "", ErrMalformed
	}
	return payload, sig, nil
}

// decode reads the claims of payload and checks their expiry at now.
func decode(payload string, now time.Time) (Claims, error) {
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	var c Claims
	if err := json.Unmarshal(b, &c); err != nil || c.Namespace == "" || c.Claim == "" || c.UID == "" {
		return Claims{}, ErrMalformed
	}
	if now.Unix() >= c.Expiry {
		return Claims{}, ErrExpired
	}
	return c, nil
}

func sign(key []byte, payload string) string {
	mac := hmac.New(sha256.New, key)
	_, _ = mac.Write([]byte(domain + Prefix + payload)) // hash.Hash never returns an error
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
