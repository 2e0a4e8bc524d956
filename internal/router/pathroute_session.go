package router

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// principalSession is a browser session of path routing (pathroute_grant.go).
const principalSession = "browser-session"

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

// servePathSession serves {prefix}/{ns}/{name}/kubox-session: POST mints a ticket, GET redeems one.
func (rt *Router) servePathSession(w http.ResponseWriter, r *http.Request, rte *route) {
	info := infoFrom(r.Context())
	info.route, info.namespace, info.name = rte.kind, rte.namespace, rte.name
	var herr *httpError
	switch {
	case !rt.synced.Load():
		herr = errorf(http.StatusServiceUnavailable, "the router is still loading Sandboxes from the Kubernetes API; retry shortly")
	case r.Method == http.MethodPost:
		herr = rt.mintTicket(w, r, rte)
	case r.Method == http.MethodGet: // not HEAD: a link checker's HEAD must not spend the ticket
		herr = rt.redeemTicket(w, r, rte)
	default:
		herr = errorf(http.StatusMethodNotAllowed, "%s/%s takes POST (mint a ticket) or GET (open a session with ?ticket=), not %s",
			rte.base, sessionSegment, r.Method)
	}
	if herr != nil {
		writeError(w, herr)
	}
}

// mintTicket answers a ticket for a client that may connect to the sandbox.
func (rt *Router) mintTicket(w http.ResponseWriter, r *http.Request, rte *route) *httpError {
	next := r.URL.Query().Get("next")
	if herr := checkNext(next); herr != nil {
		return herr
	}
	ttl, herr := rt.mintTTL(r)
	if herr != nil {
		return herr
	}
	ctx := r.Context()
	p, herr := rt.authenticateTicketMinter(ctx, r)
	if herr == nil {
		infoFrom(ctx).principal = p.name()
		herr = rt.authorize(ctx, p, access{namespace: rte.namespace, name: rte.name})
	}
	rt.recordDecision(herr)
	if herr != nil {
		return herr
	}
	sb, herr := rt.existingSandbox(ctx, rte)
	if herr != nil {
		return herr
	}
	if herr := checkClaimOwns(p, nil, sb); herr != nil {
		return herr
	}
	now := rt.now()
	sessionExpiry := now.Add(ttl).Unix()
	if p.claim != nil {
		sessionExpiry = min(sessionExpiry, p.claim.Expiry) // a session never outlives the claim token that opened it
	}
	g := grant{Use: useTicket, Namespace: rte.namespace, Name: rte.name, UID: sb.UID, Subject: p.name(),
		Expiry: now.Add(ticketTTL).Unix(), SessionExpiry: sessionExpiry, ID: newTicketID()}
	tok := mintGrant(rt.cfg.AgentTokenKey, g)
	u := rte.base + "/" + sessionSegment + "?ticket=" + url.QueryEscape(tok)
	if next != "" {
		u += "&next=" + url.QueryEscape(next)
	}
	writeJSON(w, http.StatusOK, sessionTicketResponse{Ticket: tok, ExpiresAt: unixRFC3339(g.Expiry),
		SessionExpiresAt: unixRFC3339(sessionExpiry), URL: u})
	return nil
}

// authenticateTicketMinter accepts the credentials of any route, from the Authorization header
// only; a session cannot mint tickets (it would outlive itself through them).
func (rt *Router) authenticateTicketMinter(ctx context.Context, r *http.Request) (*principal, *httpError) {
	tok, _, herr := bearer(r, false)
	if herr == nil && tok == "" {
		herr = errorf(http.StatusUnauthorized, "minting a browser ticket needs an Authorization header (the kubox-token cookie "+
			"does not mint); %s", rt.acceptedCredentials())
	}
	if herr == nil && strings.HasPrefix(tok, grantPrefix) {
		herr = errorf(http.StatusForbidden, "a browser ticket or session cannot mint tickets; use the credentials that minted it")
	}
	if herr != nil {
		return nil, herr
	}
	return rt.authenticate(ctx, r, false)
}

// redeemTicket turns a ticket into the session cookie and sends the browser on.
func (rt *Router) redeemTicket(w http.ResponseWriter, r *http.Request, rte *route) *httpError {
	q := r.URL.Query()
	next := q.Get("next")
	if herr := checkNext(next); herr != nil {
		return herr
	}
	tok := q.Get("ticket")
	if tok == "" {
		return errorf(http.StatusUnauthorized, "open %s/%s?ticket=... with a ticket from POST %s/%s (with an Authorization header)",
			rte.base, sessionSegment, rte.base, sessionSegment)
	}
	now := rt.now()
	g, herr := verifyGrant(rt.cfg.AgentTokenKey, tok, useTicket, now)
	if herr == nil && (g.Namespace != rte.namespace || g.Name != rte.name) {
		herr = errorf(http.StatusForbidden, "the ticket opens sandbox %s/%s, not %s/%s", g.Namespace, g.Name, rte.namespace, rte.name)
	}
	if herr == nil && !rt.tickets.redeem(g.ID, g.Expiry, now) {
		herr = errorf(http.StatusUnauthorized, "the ticket was used already: a ticket opens one session; ask for a new one")
	}
	rt.recordDecision(herr)
	if herr != nil {
		return herr
	}
	infoFrom(r.Context()).principal = "ticket:" + g.Subject
	sb, herr := rt.existingSandbox(r.Context(), rte)
	if herr != nil {
		return herr
	}
	if sb.UID != g.UID {
		return errorf(http.StatusUnauthorized, "the ticket was minted for an earlier sandbox %s/%s, which no longer exists; ask for a new one", g.Namespace, g.Name)
	}
	s := grant{Use: useSession, Namespace: g.Namespace, Name: g.Name, UID: g.UID, Subject: g.Subject, Expiry: g.SessionExpiry}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: mintGrant(rt.cfg.AgentTokenKey, s), Path: rte.base + "/",
		MaxAge: int(max(s.Expiry-now.Unix(), 1)), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: viaTLS(r)})
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer") // the ticket's URL goes nowhere else
	if next == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(w, "A browser session for sandbox %s/%s is open until %s: open %s/{port}/\n", s.Namespace, s.Name,
			unixRFC3339(s.Expiry), rte.base)
		return nil
	}
	h.Set("Location", rte.base+"/"+next)
	w.WriteHeader(http.StatusSeeOther)
	return nil
}

// existingSandbox is the route's sandbox, or 404.
func (rt *Router) existingSandbox(ctx context.Context, rte *route) (*sandboxv1beta1.Sandbox, *httpError) {
	sb, herr := rt.lookupSandbox(ctx, rte.namespace, rte.name)
	if herr == nil && sb == nil {
		herr = errorf(http.StatusNotFound, "sandbox %s/%s does not exist (or the router has not seen it yet); "+
			"check the name with: kubectl get sandboxes -n %s", rte.namespace, rte.name, rte.namespace)
	}
	return sb, herr
}

// checkNext accepts "" or "{port}[/path][?query]": where, under the sandbox, a redeemed ticket
// sends the browser. No "." or ".." segment, no backslash, no control character, so the browser
// cannot be sent out of the sandbox's paths.
func checkNext(next string) *httpError {
	if next == "" {
		return nil
	}
	bad := errorf(http.StatusBadRequest, "next %q is not {port}/{path}: a port from 1 to 65535, then a path under it, no . or .. segments", clip(next))
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

// authenticateRoute finds who sent a request for rte. On preview hosts the kubox-token cookie
// may hold any credential; on path routes it holds only a browser session (and the
// Authorization header any credential, a session too).
func (rt *Router) authenticateRoute(ctx context.Context, r *http.Request, rte *route) (*principal, *httpError) {
	if rte.kind != kindPath {
		return rt.authenticate(ctx, r, rte.kind == kindPreview)
	}
	tok, fromCookie, herr := bearer(r, true)
	switch {
	case herr != nil:
		return nil, herr
	case fromCookie && !strings.HasPrefix(tok, grantPrefix):
		return nil, errorf(http.StatusUnauthorized, "the %s cookie of a path route must hold a browser session: get one by opening "+
			"the URL POST %s/%s answers to a client with credentials", tokenCookie, strings.TrimSuffix(rte.base, "/"+strconv.Itoa(rte.port)), sessionSegment)
	case !strings.HasPrefix(tok, grantPrefix):
		return rt.authenticate(ctx, r, false)
	case fromCookie:
		if herr := checkCookieSite(r); herr != nil {
			return nil, errorf(http.StatusForbidden, "%s %s came from another site (%s) with the %s cookie: path routes refuse cookie-"+
				"authenticated requests from other sites' pages (cross-site request forgery); send the token in an Authorization "+
				"header, or make the request from the sandbox's own page", r.Method, clip(r.URL.Path), clip(requestSite(r)), tokenCookie)
		}
	}
	g, herr := verifyGrant(rt.cfg.AgentTokenKey, tok, useSession, rt.now())
	if herr != nil {
		return nil, herr
	}
	return &principal{kind: principalSession, session: &g}, nil
}

// requestSite is what a browser says a request came from, for messages.
func requestSite(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		return o
	}
	return "Sec-Fetch-Site: " + r.Header.Get("Sec-Fetch-Site")
}

// checkPathRoute runs the checks of a path route that need its sandbox: a session opens only the
// sandbox (by UID) it was opened for, and the agent's ports are refused whatever the credentials,
// as on preview hosts: the router would add the agent token, and a page could run commands.
func checkPathRoute(p *principal, rte *route, sb *sandboxv1beta1.Sandbox) *httpError {
	if rte.kind != kindPath {
		return nil
	}
	if p.session != nil && p.session.UID != sb.UID {
		return errorf(http.StatusUnauthorized, "the browser session was opened for an earlier sandbox %s/%s, which no longer exists; "+
			"open a new one", sb.Namespace, sb.Name)
	}
	if what := agentPortRole(sb, rte.port); what != "" {
		return errorf(http.StatusForbidden, "port %d of sandbox %s/%s is %s, which path routes never serve (a web page could run "+
			"commands through it); use /sandboxes/%s/%s/... with an Authorization header instead", rte.port, sb.Namespace, sb.Name,
			what, sb.Namespace, sb.Name)
	}
	return nil
}
