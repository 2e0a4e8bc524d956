// Package nodetls is the TLS of kubox-node's API, which kubox-controller calls with the node
// token (docs/security.md, "kubox-node's API"). The node token is the one secret the two sides
// already share, so it is also the server's identity: kubox-node serves a certificate whose
// Ed25519 key is derived from the token (PBKDF2-HMAC-SHA-256, many iterations, a fixed salt), and
// the controller accepts only a server that proves it holds the key its own copy of the token
// derives. The token crosses only inside TLS 1.3, and only to a server that holds it already: a
// listener in the network's path, without the token, can neither read nor answer a call. No
// certificate authority, Secret or renewal is needed beyond the token Secret the install already
// makes; rotating the token rotates the key.
package nodetls

import (
	"crypto/ed25519"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// ServerName is the name in kubox-node's certificate. Clients do not check it (they check the
// key), but tools that print certificates show it.
const ServerName = "kubox-node"

// The derivation of the key from the token. Changing any of them changes every node's key: bump
// the salt's version, and the controller and kubox-node must be upgraded together.
const (
	salt = "kubox.dev/node-api-tls/v1"
	// iterations makes each guess of a token cost what OWASP asks of a password (PBKDF2-SHA-256):
	// the key is public, and a weak token must not be found from it offline. Derived once per
	// token value by each side.
	iterations = 600_000
)

// keys caches the key of the last tokens seen, by the token's SHA-256.
var keys = struct {
	sync.Mutex
	m map[[sha256.Size]byte]ed25519.PrivateKey
}{m: map[[sha256.Size]byte]ed25519.PrivateKey{}}

// Key is the Ed25519 key of kubox-node's API for the node token tok.
func Key(tok []byte) (ed25519.PrivateKey, error) {
	if len(tok) == 0 {
		return nil, errors.New("the node token is empty")
	}
	sum := sha256.Sum256(tok)
	keys.Lock()
	defer keys.Unlock()
	if k, ok := keys.m[sum]; ok {
		return k, nil
	}
	seed, err := pbkdf2.Key(sha256.New, string(tok), []byte(salt), iterations, ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	if len(keys.m) >= 4 { // a rotation keeps the old and the new; nothing else comes here
		clear(keys.m)
	}
	k := ed25519.NewKeyFromSeed(seed)
	keys.m[sum] = k
	return k, nil
}

// ServerConfig is the TLS configuration of kubox-node's API: TLS 1.3 with a certificate of the
// key of the token that token returns, asked at each handshake (the token file is read again
// when it changes). While token fails, the last good certificate is served.
func ServerConfig(token func() ([]byte, error)) *tls.Config {
	var (
		mu   sync.Mutex
		sum  [sha256.Size]byte
		cert *tls.Certificate
	)
	get := func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		tok, err := token()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if cert != nil {
				return cert, nil
			}
			return nil, fmt.Errorf("kubox-node has no node token to serve its API with: %w", err)
		}
		if s := sha256.Sum256(tok); cert == nil || s != sum {
			c, err := certificate(tok)
			if err != nil {
				return nil, err
			}
			sum, cert = s, c
		}
		return cert, nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: get}
}

// certificate is a self-signed certificate of the key of tok. Its dates and signature do not
// matter to a client, which checks the key alone.
func certificate(tok []byte) (*tls.Certificate, error) {
	key, err := Key(tok)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: ServerName}, DNSNames: []string{ServerName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// ErrNotKuboxNode is the error of a handshake with a server that does not hold the key of the
// node token: not kubox-node, or a kubox-node with another token.
var ErrNotKuboxNode = errors.New("the server's TLS key is not the one the node token derives: it is not kubox-node, " +
	"or its node token differs from the controller's (the Secret kubox-node-token must hold the same token in both namespaces)")

// ClientConfig is the TLS configuration of a client of kubox-node's API with the node token tok:
// TLS 1.3, and a server is trusted only when its certificate has the key tok derives. (The
// handshake proves the server holds that key's private half; no certificate authority is used,
// so the chain and the name are not verified.)
func ClientConfig(tok []byte) (*tls.Config, error) {
	key, err := Key(tok)
	if err != nil {
		return nil, err
	}
	want := key.Public().(ed25519.PublicKey)
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		ServerName: ServerName,
		// The chain is replaced by the check of the key in VerifyConnection.
		InsecureSkipVerify: true, //nolint:gosec // the server's key is pinned below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrNotKuboxNode
			}
			if got, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey); !ok || !want.Equal(got) {
				return ErrNotKuboxNode
			}
			return nil
		},
	}, nil
}
