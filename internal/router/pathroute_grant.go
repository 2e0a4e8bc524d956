package router

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
	grantPrefix = "kbs1."
	grantDomain = "kubox-router-browser-grant/v1\x00"
	// ticketTTL is how long a ticket can be redeemed: long enough to open a link, short enough
	// that one read from a log is spent or dead.
	ticketTTL = time.Minute
	// maxGrantBytes bounds what verifyGrant decodes.
	maxGrantBytes = 4096
)

// Uses of a grant.
const (
	useTicket  = "ticket"
	useSession = "session"
)

// grant is what a ticket or session opens.
type grant struct {
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

// mintGrant signs g.
func mintGrant(key []byte, g grant) string {
	b, _ := json.Marshal(g) // a struct of strings and numbers always marshals
	payload := base64.RawURLEncoding.EncodeToString(b)
	return grantPrefix + payload + "." + signGrant(key, payload)
}

// verifyGrant checks tok's signature and expiry and that it is a grant of use.
func verifyGrant(key []byte, tok, use string, now time.Time) (grant, *httpError) {
	rest, ok := strings.CutPrefix(tok, grantPrefix)
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(tok) > maxGrantBytes {
		return grant{}, errorf(http.StatusUnauthorized, "%v", errGrantMalformed)
	}
	if !hmac.Equal([]byte(signGrant(key, payload)), []byte(sig)) {
		return grant{}, errorf(http.StatusUnauthorized, "%v", errGrantSignature)
	}
	var g grant
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &g) != nil || g.Namespace == "" || g.Name == "" || g.UID == "" {
		return grant{}, errorf(http.StatusUnauthorized, "%v", errGrantMalformed)
	}
	if g.Use != use {
		return grant{}, errorf(http.StatusUnauthorized, "the browser credential is a %s, not a %s", g.Use, use)
	}
	if now.Unix() >= g.Expiry {
		return grant{}, errorf(http.StatusUnauthorized, "the browser %s has expired; ask for a new ticket with "+
			"POST {prefix}/{namespace}/{name}/%s and an Authorization header", use, sessionSegment)
	}
	return g, nil
}

func signGrant(key []byte, payload string) string {
	mac := hmac.New(sha256.New, key)
	_, _ = mac.Write([]byte(grantDomain + grantPrefix + payload)) // hash.Hash never returns an error
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// newTicketID is 128 random bits.
func newTicketID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// ticketLedger remembers the tickets this router redeemed until they expire. It is per process:
// with several router replicas, a ticket read from a log could be redeemed once more on each other
// replica within its minute (docs/router.md). The zero value is ready.
type ticketLedger struct {
	mu   sync.Mutex
	used map[string]int64 // ID -> expiry (Unix seconds)
}

// redeem records ID (expiring at exp) and reports whether it was new.
func (l *ticketLedger) redeem(id string, exp int64, now time.Time) bool {
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

// authorize opens the grant's own sandbox and nothing else.
func (g *grant) authorize(a access) *httpError {
	if !a.claim && a.namespace == g.Namespace && a.name == g.Name {
		return nil
	}
	return errorf(http.StatusForbidden, "the browser session opens only sandbox %s/%s, not %s/%s", g.Namespace, g.Name, a.namespace, a.name)
}
