// Package token derives the per-sandbox agent token that kubox-agent requires of every request.
//
// The controller and the router share one key. The token of a sandbox is an HMAC-SHA256 of the
// sandbox's UID under that key, so the controller can write it into a Secret the sandbox's Pod
// mounts, and the router can compute it for each request without reading any Secret. A UID is
// never reused, so a deleted and recreated sandbox of the same name gets a new token.
package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/types"
)

// MinKeyBytes is the shortest key accepted: an HMAC-SHA256 key shorter than its output weakens it.
const MinKeyBytes = 32

// domain separates agent tokens from any other use of the same key.
const domain = "kubox-agent-token/v1\x00"

// Derive returns the agent token of the sandbox with uid: the unpadded base64url encoding of
// HMAC-SHA256(key, domain || uid), 43 characters.
func Derive(key []byte, uid types.UID) string {
	mac := hmac.New(sha256.New, key)
	_, _ = mac.Write([]byte(domain + string(uid))) // hash.Hash never returns an error
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// LoadKey reads the shared key from path. Surrounding whitespace (a trailing newline from an
// editor or `echo`) is not part of the key. The key must be at least MinKeyBytes long.
func LoadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the agent token key: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the agent token key in %s has %d bytes; it needs at least %d "+
			"(make one with: head -c 48 /dev/urandom | base64 > %s)", path, len(key), MinKeyBytes, path)
	}
	return key, nil
}
