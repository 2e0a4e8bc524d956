package pathroute

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// How a browser gets its session cookie, without a lasting credential in a URL:
//
//  1. A client with credentials (a Kubernetes token, a claim token, the shared token) asks for a
//     ticket: POST {prefix}/{ns}/{name}/kubox-session[?next={port}/{path}] with Authorization.
//     The router checks it as for any route to that sandbox and answers the ticket and the URL
//     to open: {prefix}/{ns}/{name}/kubox-session?ticket=...&next=...
//  2. The browser opens that URL. The router redeems the ticket (once, within a minute), sets
//     kubox-token=<session> with Path={prefix}/{ns}/{name}/, HttpOnly, SameSite=Lax, and sends
//     the browser on to {prefix}/{ns}/{name}/{next}.
//
// A URL that reaches a log thus holds a ticket that is spent or expires within a minute; the
// session, which lasts (ttlSeconds of the POST's body, as for claim tokens), only ever travels
// in the cookie, and only to that sandbox's paths.

// sessionTicketResponse is the answer to POST {prefix}/{ns}/{name}/kubox-session.
type sessionTicketResponse struct {
	Ticket           string `json:"ticket"`
	ExpiresAt        string `json:"expiresAt"`
	SessionExpiresAt string `json:"sessionExpiresAt"`
	// URL is the origin-relative address the browser opens.
	URL string `json:"url"`
}

// Minter is who asked for a ticket, as the router admitted them.
type Minter struct {
	// Subject names them in the access log of the session's requests.
	Subject string
	// Expiry, when not 0, is the Unix second past which the session may not live (a claim
	// token's expiry: a session never outlives the credential that opened it).
	Expiry int64
	// UID is the sandbox's, which the ticket and its session open.
	UID types.UID
}

// SessionDeps is what the session endpoint acts with: the router's checks, lent as functions.
type SessionDeps struct {
	// Key signs grants (the router's agent token key).
	Key []byte
	Now func() time.Time
	// Synced reports whether the router's cache has loaded every Sandbox.
	Synced func() bool
	// TTL reads the session's lifetime from the request's body ({"ttlSeconds": N}).
	TTL func(r *http.Request) (time.Duration, *httperr.Error)
	// Admit checks the credentials of a ticket's request (Authorization only; no browser
	// credential mints), its permission on Sandbox ns/name, and that the sandbox exists.
	Admit func(ctx context.Context, r *http.Request, ns, name string) (Minter, *httperr.Error)
	// SandboxUID is the UID of Sandbox ns/name in the router's cache (404 when it does not exist).
	SandboxUID func(ctx context.Context, ns, name string) (types.UID, *httperr.Error)
	// RecordDecision counts a redemption's outcome; Observe names its principal in the access log.
	RecordDecision func(herr *httperr.Error)
	Observe        func(r *http.Request, principal string)
	// Tickets remembers the tickets redeemed.
	Tickets *Ledger
}

// Sessions serves {prefix}/{ns}/{name}/kubox-session.
type Sessions struct{ SessionDeps }

// ServeSession serves the session endpoint of rte (a Route with Session): POST mints a ticket,
// GET redeems one.
func (s *Sessions) ServeSession(w http.ResponseWriter, r *http.Request, rte *Route) {
	var herr *httperr.Error
	switch {
	case !s.Synced():
		herr = httperr.Errorf(http.StatusServiceUnavailable, "the router is still loading Sandboxes from the Kubernetes API; retry shortly")
	case r.Method == http.MethodPost:
		herr = s.mintTicket(w, r, rte)
	case r.Method == http.MethodGet: // not HEAD: a link checker's HEAD must not spend the ticket
		herr = s.redeemTicket(w, r, rte)
	default:
		herr = httperr.Errorf(http.StatusMethodNotAllowed, "%s/%s takes POST (mint a ticket) or GET (open a session with ?ticket=), not %s",
			rte.Base, SessionSegment, r.Method)
	}
	if herr != nil {
		httperr.Write(w, herr)
	}
}

// mintTicket answers a ticket for a client that may connect to the sandbox.
func (s *Sessions) mintTicket(w http.ResponseWriter, r *http.Request, rte *Route) *httperr.Error {
	next := r.URL.Query().Get("next")
	if herr := CheckNext(next); herr != nil {
		return herr
	}
	ttl, herr := s.TTL(r)
	if herr != nil {
		return herr
	}
	m, herr := s.Admit(r.Context(), r, rte.Namespace, rte.Name)
	if herr != nil {
		return herr
	}
	now := s.Now()
	sessionExpiry := now.Add(ttl).Unix()
	if m.Expiry != 0 {
		sessionExpiry = min(sessionExpiry, m.Expiry) // a session never outlives the claim token that opened it
	}
	g := Grant{Use: UseTicket, Namespace: rte.Namespace, Name: rte.Name, UID: m.UID, Subject: m.Subject,
		Expiry: now.Add(TicketTTL).Unix(), SessionExpiry: sessionExpiry, ID: NewTicketID()}
	tok := MintGrant(s.Key, g)
	u := rte.Base + "/" + SessionSegment + "?ticket=" + url.QueryEscape(tok)
	if next != "" {
		u += "&next=" + url.QueryEscape(next)
	}
	httperr.WriteJSON(w, http.StatusOK, sessionTicketResponse{Ticket: tok, ExpiresAt: unixRFC3339(g.Expiry),
		SessionExpiresAt: unixRFC3339(sessionExpiry), URL: u})
	return nil
}

// redeemTicket turns a ticket into the session cookie and sends the browser on.
func (s *Sessions) redeemTicket(w http.ResponseWriter, r *http.Request, rte *Route) *httperr.Error {
	q := r.URL.Query()
	next := q.Get("next")
	if herr := CheckNext(next); herr != nil {
		return herr
	}
	tok := q.Get("ticket")
	if tok == "" {
		return httperr.Errorf(http.StatusUnauthorized, "open %s/%s?ticket=... with a ticket from POST %s/%s (with an Authorization header)",
			rte.Base, SessionSegment, rte.Base, SessionSegment)
	}
	g, herr := s.redeem(tok, rte)
	s.RecordDecision(herr)
	if herr != nil {
		return herr
	}
	s.Observe(r, "ticket:"+g.Subject)
	uid, herr := s.SandboxUID(r.Context(), rte.Namespace, rte.Name)
	if herr != nil {
		return herr
	}
	if uid != g.UID {
		return httperr.Errorf(http.StatusUnauthorized, "the ticket was minted for an earlier sandbox %s/%s, which no longer exists; ask for a new one", g.Namespace, g.Name)
	}
	now := s.Now()
	session := Grant{Use: UseSession, Namespace: g.Namespace, Name: g.Name, UID: g.UID, Subject: g.Subject, Expiry: g.SessionExpiry}
	http.SetCookie(w, &http.Cookie{Name: contract.RouterTokenCookie, Value: MintGrant(s.Key, session), Path: rte.Base + "/",
		MaxAge: int(max(session.Expiry-now.Unix(), 1)), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: viaTLS(r)})
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer") // the ticket's URL goes nowhere else
	if next == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(w, "A browser session for sandbox %s/%s is open until %s: open %s/{port}/\n", session.Namespace, session.Name,
			unixRFC3339(session.Expiry), rte.Base)
		return nil
	}
	h.Set("Location", rte.Base+"/"+next)
	w.WriteHeader(http.StatusSeeOther)
	return nil
}

// redeem verifies tok, a ticket for rte's sandbox, and spends it.
func (s *Sessions) redeem(tok string, rte *Route) (Grant, *httperr.Error) {
	now := s.Now()
	g, herr := VerifyGrant(s.Key, tok, UseTicket, now)
	if herr == nil && (g.Namespace != rte.Namespace || g.Name != rte.Name) {
		herr = httperr.Errorf(http.StatusForbidden, "the ticket opens sandbox %s/%s, not %s/%s", g.Namespace, g.Name, rte.Namespace, rte.Name)
	}
	if herr == nil && !s.Tickets.Redeem(g.ID, g.Expiry, now) {
		herr = httperr.Errorf(http.StatusUnauthorized, "the ticket was used already: a ticket opens one session; ask for a new one")
	}
	return g, herr
}

// CheckNext accepts "" or "{port}[/path][?query]": where, under the sandbox, a redeemed ticket
// sends the browser. No "." or ".." segment, no backslash, no control character, so the browser
// cannot be sent out of the sandbox's paths.
func CheckNext(next string) *httperr.Error {
	if next == "" {
		return nil
	}
	bad := httperr.Errorf(http.StatusBadRequest, "next %q is not {port}/{path}: a port from 1 to 65535, then a path under it, no . or .. segments",
		httperr.Clip(next))
	p, _, _ := strings.Cut(next, "?")
	p, _, _ = strings.Cut(p, "#")
	segs := strings.Split(p, "/")
	port, err := strconv.Atoi(segs[0])
	if err != nil || port < 1 || port > 65535 || strings.TrimLeft(segs[0], "0123456789") != "" ||
		strings.ContainsAny(next, "\\") || strings.ContainsFunc(next, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return bad
	}
	for _, s := range segs[1:] {
		if u, err := url.PathUnescape(s); err != nil || u == "." || u == ".." {
			return bad
		}
	}
	return nil
}

// viaTLS reports whether the browser reached the router over TLS (terminated in front of it).
// A client that lies gets a Secure cookie it cannot use over plain HTTP: its own loss.
func viaTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func unixRFC3339(s int64) string { return time.Unix(s, 0).UTC().Format(time.RFC3339) }
