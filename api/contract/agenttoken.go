package contract

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/types"
)

// The agent token is the per-sandbox bearer token kubox-agent requires of every request.
//
// kubox-controller and kubox-router share one key. The token of a sandbox is an HMAC-SHA256 of
// the sandbox's UID under that key, so the controller can write it into the Secret the sandbox's
// Pod mounts (api/v1beta1.AgentSecretName), and the router can compute it for each request
// without reading any Secret. A UID is never reused, so a deleted and recreated sandbox of the
// same name gets a new token. kubox-agent only compares the token it was given; it never derives
// one.

// MinAgentTokenKeyBytes is the shortest agent token key accepted: an HMAC-SHA256 key shorter
// than its output weakens it. Read by kubox-controller and kubox-router when they load the key.
const MinAgentTokenKeyBytes = 32

// agentTokenDomain separates agent tokens from any other use of the same key.
const agentTokenDomain = "kubox-agent-token/v1\x00"

// DeriveAgentToken returns the agent token of the sandbox with uid: the unpadded base64url
// encoding of HMAC-SHA256(key, "kubox-agent-token/v1\x00" || uid), 43 characters.
// kubox-controller writes it into the sandbox's agent token Secret; kubox-router sends it to the
// sandbox's agent as "Authorization: Bearer <token>".
func DeriveAgentToken(key []byte, uid types.UID) string {
	mac := hmac.New(sha256.New, key)
	_, _ = mac.Write([]byte(agentTokenDomain + string(uid))) // hash.Hash never returns an error
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// LoadAgentTokenKey reads the shared agent token key from path, the file kubox-controller and
// kubox-router mount from the same Secret. Surrounding whitespace (a trailing newline from an
// editor or `echo`) is not part of the key. The key must be at least MinAgentTokenKeyBytes long.
func LoadAgentTokenKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the agent token key: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < MinAgentTokenKeyBytes {
		return nil, fmt.Errorf("the agent token key in %s has %d bytes; it needs at least %d "+
			"(make one with: head -c 48 /dev/urandom | base64 > %s)", path, len(key), MinAgentTokenKeyBytes, path)
	}
	return key, nil
}
