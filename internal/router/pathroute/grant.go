package pathroute

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// Browser grants: the credentials of path routing. A grant is "kbs1.<payload>.<signature>", the
// payload the unpadded base64url of the JSON of grant, the signature the unpadded base64url of
// HMAC-SHA256(key, grantDomain || "kbs1." || payload) with the router's agent token key; the
// domain string keeps these MACs apart from agent tokens and claim tokens.
//
// A ticket (60 s, one use) is what a client with real credentials hands a browser in a URL; the
// browser trades it for a session, which lives only in the kubox-token cookie of one sandbox's
// path. Both open that one sandbox (by UID: a sandbox recreated under the name is closed to them).

const (
	// GrantPrefix starts every grant: a token that has it is a browser ticket or session.
	GrantPrefix = "kbs1."
	grantDomain = "kubox-router-browser-grant/v1\x00"
	// TicketTTL is how long a ticket can be redeemed: long enough to open a link, short enough
	// that one read from a log is spent or dead.
	TicketTTL = time.Minute
	// maxGrantBytes bounds what VerifyGrant decodes.
	maxGrantBytes = 4096
)

// Uses of a grant.
const (
	UseTicket  = "ticket"
	UseSession = "session"
)

// Grant is what a ticket or session opens.
type Grant struct {
	Use       string    `json:"use"`
	Namespace string    `json:"ns"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Subject is the principal that minted the ticket, for the access log.
	Subject string `json:"sub"`
	// Expiry is in Unix seconds; SessionExpiry, of a ticket, is the expiry of its session.
	Expiry        int64 `json:"exp"`
	SessionExpiry int64 `json:"sexp,omitempty"`
	// ID makes a ticket one-use.
	ID string `json:"id,omitempty"`
}

var (
	errGrantMalformed = errors.New("the browser credential is malformed: it is not kbs1.<payload>.<signature>")
	errGrantSignature = errors.New("the browser credential's signature does not match: it was not minted by this router's key, or was altered")
)

// MintGrant signs g with key.
func MintGrant(key []byte, g Grant) string {
	b, _ := json.Marshal(g) // a struct of strings and numbers always marshals
	payload := base64.RawURLEncoding.EncodeToString(b)
	return GrantPrefix + payload + "." + signGrant(key, payload)
}

// VerifyGrant checks tok's signature (with key) and expiry and that it is a grant of use.
func VerifyGrant(key []byte, tok, use string, now time.Time) (Grant, *httperr.Error) {
	rest, ok := strings.CutPrefix(tok, GrantPrefix)
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(tok) > maxGrantBytes {
		return Grant{}, httperr.Errorf(http.StatusUnauthorized, "%v", errGrantMalformed)
	}
	if !hmac.Equal([]byte(signGrant(key, payload)), []byte(sig)) {
		return Grant{}, httperr.Errorf(http.StatusUnauthorized, "%v", errGrantSignature)
	}
	var g Grant
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &g) != nil || g.Namespace == "" || g.Name == "" || g.UID == "" {
		return Grant{}, httperr.Errorf(http.StatusUnauthorized, "%v", errGrantMalformed)
	}
	if g.Use != use {
		return Grant{}, httperr.Errorf(http.StatusUnauthorized, "the browser credential is a %s, not a %s", g.Use, use)
	}
	if now.Unix() >= g.Expiry {
		return Grant{}, httperr.Errorf(http.StatusUnauthorized, "the browser %s has expired; ask for a new ticket with "+
			"POST {prefix}/{namespace}/{name}/%s and an Authorization header", use, SessionSegment)
	}
	return g, nil
}

func signGrant(key []byte, payload string) string {
	mac := hmac.New(sha256.New, key)
	_, _ = mac.Write([]byte(grantDomain + GrantPrefix + payload)) // hash.Hash never returns an error
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// NewTicketID is 128 random bits.
func NewTicketID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// Ledger remembers the tickets this router redeemed until they expire. It is per process:
// with several router replicas, a ticket read from a log could be redeemed once more on each other
// replica within its minute (docs/router.md). The zero value is ready.
type Ledger struct {
	mu   sync.Mutex
	used map[string]int64 // ID -> expiry (Unix seconds)
}

// Redeem records id (expiring at exp) and reports whether it was new.
func (l *Ledger) Redeem(id string, exp int64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.used == nil {
		l.used = map[string]int64{}
	}
	for k, e := range l.used {
		if now.Unix() >= e {
			delete(l.used, k)
		}
	}
	if _, seen := l.used[id]; seen {
		return false
	}
	l.used[id] = exp
	return true
}

// Authorize opens the grant's own sandbox and nothing else: Sandbox ns/name (not a claim).
func (g *Grant) Authorize(ns, name string, claim bool) *httperr.Error {
	if !claim && ns == g.Namespace && name == g.Name {
		return nil
	}
	return httperr.Errorf(http.StatusForbidden, "the browser session opens only sandbox %s/%s, not %s/%s", g.Namespace, g.Name, ns, name)
}
