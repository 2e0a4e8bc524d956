package router

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/pathroute"
)

// Browser path routing (agent-sandbox's --path-routing-prefix): with Config.PathRoutingPrefix
// "/browse", "/browse/{ns}/{name}/{port}/{rest...}" goes to that port of Sandbox ns/name with the
// path "/{rest...}". Browsers cannot set headers, not even on a WebSocket handshake; a page loaded
// under the prefix opens its relative URLs (WebSockets included) under it too, so the route
// travels with every request the page makes.
//
// "/browse/{ns}/{name}/kubox-session" is the router's own: it turns a one-time ticket into the
// session cookie (pathroute.Sessions). No port is called that, so no sandbox path is hidden.
//
// Path routes have a host of their own, Config.PathRoutingHost, and that host serves nothing
// else (checkPathRoutingOrigin): a page a sandbox serves runs with its URL's origin, and on the
// dashboard's origin its scripts would read the viewer's Kubernetes token from sessionStorage
// (or from a dashboard window they open). The browser's same-origin policy is the boundary: the
// content host's pages cannot read another origin's storage or reach into its windows, and the
// dashboard also answers Cross-Origin-Opener-Policy: same-origin (dashboard.go), so a window a
// sandbox page opens on it is severed from its opener.

// Route kinds of path routing, also the "route" field of the access log.
const (
	kindPath        = "path"         // {prefix}/{ns}/{name}/{port}/...
	kindPathSession = "path-session" // {prefix}/{ns}/{name}/kubox-session
)

// onPathRoutingHost reports whether host (a request's Host, perhaps with a port) is the
// path-routing host. Ports are not compared: the content host's name is for content alone.
func (rt *Router) onPathRoutingHost(host string) bool {
	if rt.cfg.PathRoutingHost == "" {
		return false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.EqualFold(strings.TrimSuffix(host, "."), rt.cfg.PathRoutingHost)
}

// checkPathRoutingOrigin keeps sandboxes' pages and the router's own apart: a path route (rte of
// kindPath or kindPathSession) is served only on the path-routing host, and on that host only
// path routes and the health paths are. So no page a sandbox serves ever shares an origin with
// the dashboard, and the dashboard is never opened on the sandboxes' origin.
func (rt *Router) checkPathRoutingOrigin(r *http.Request, rte *route) *httpError {
	if rt.cfg.PathRoutingPrefix == "" {
		return nil
	}
	content := rt.onPathRoutingHost(r.Host)
	path := rte != nil && (rte.kind == kindPath || rte.kind == kindPathSession)
	switch {
	case path && !content:
		return errorf(http.StatusForbidden, "path routes (%s/...) are served only on host %s (--path-routing-host), not on %s: "+
			"a sandbox's page on this host would share its origin with the dashboard and could read its viewers' tokens; "+
			"open the same path on %s", rt.cfg.PathRoutingPrefix, rt.cfg.PathRoutingHost, clip(r.Host), rt.cfg.PathRoutingHost)
	case content && !path && r.URL.Path != healthPath && r.URL.Path != readyPath:
		return errorf(http.StatusForbidden, "host %s serves only path routes (%s/{namespace}/{name}/{port}/...): it is the origin of "+
			"sandboxes' pages (--path-routing-host), so the dashboard and the router's other routes are not served on it; "+
			"use the router's other host name for %s", clip(r.Host), rt.cfg.PathRoutingPrefix, clip(r.URL.Path))
	}
	return nil
}

// servePathSession serves {prefix}/{ns}/{name}/kubox-session (pathroute.Sessions): POST mints a
// ticket, GET redeems one.
func (rt *Router) servePathSession(w http.ResponseWriter, r *http.Request, rte *route) {
	info := infoFrom(r.Context())
	info.route, info.namespace, info.name = rte.kind, rte.namespace, rte.name
	rt.sessions.ServeSession(w, r, &pathroute.Route{Session: true, Namespace: rte.namespace, Name: rte.name, Base: rte.base})
}

// newSessions builds the session endpoint of path routing, lending it the router's checks.
func (rt *Router) newSessions() *pathroute.Sessions {
	return &pathroute.Sessions{SessionDeps: pathroute.SessionDeps{Key: rt.cfg.AgentTokenKey, Now: rt.now, Synced: rt.synced.Load,
		TTL: rt.mintTTL, Admit: rt.admitTicketMinter, SandboxUID: rt.sandboxUID, RecordDecision: rt.recordDecision,
		Observe: func(r *http.Request, p string) { infoFrom(r.Context()).principal = p }, Tickets: &rt.tickets}}
}

// admitTicketMinter checks a request for a ticket to Sandbox ns/name as for any route to it:
// credentials (from the Authorization header only), permission, then the sandbox's existence
// and, for a claim token, that the sandbox is its claim's.
func (rt *Router) admitTicketMinter(ctx context.Context, r *http.Request, ns, name string) (pathroute.Minter, *httpError) {
	p, herr := rt.authenticateTicketMinter(ctx, r)
	if herr == nil {
		infoFrom(ctx).principal = p.name()
		herr = rt.authorize(ctx, p, access{namespace: ns, name: name})
	}
	rt.recordDecision(herr)
	if herr != nil {
		return pathroute.Minter{}, herr
	}
	sb, herr := rt.existingSandbox(ctx, ns, name)
	if herr != nil {
		return pathroute.Minter{}, herr
	}
	if herr := checkClaimOwns(p, nil, sb); herr != nil {
		return pathroute.Minter{}, herr
	}
	m := pathroute.Minter{Subject: p.name(), UID: sb.UID}
	if p.claim != nil {
		m.Expiry = p.claim.Expiry
	}
	return m, nil
}

// authenticateTicketMinter accepts the credentials of any route, from the Authorization header
// only; a session cannot mint tickets (it would outlive itself through them).
func (rt *Router) authenticateTicketMinter(ctx context.Context, r *http.Request) (*principal, *httpError) {
	tok, _, herr := bearer(r, false)
	if herr == nil && tok == "" {
		herr = errorf(http.StatusUnauthorized, "minting a browser ticket needs an Authorization header (the kubox-token cookie "+
			"does not mint); %s", rt.acceptedCredentials())
	}
	if herr == nil && strings.HasPrefix(tok, pathroute.GrantPrefix) {
		herr = errorf(http.StatusForbidden, "a browser ticket or session cannot mint tickets; use the credentials that minted it")
	}
	if herr != nil {
		return nil, herr
	}
	return rt.authenticate(ctx, r, false)
}

// sandboxUID is the UID of Sandbox ns/name, or 404.
func (rt *Router) sandboxUID(ctx context.Context, ns, name string) (types.UID, *httpError) {
	sb, herr := rt.existingSandbox(ctx, ns, name)
	if herr != nil {
		return "", herr
	}
	return sb.UID, nil
}

// existingSandbox is Sandbox ns/name, or 404.
func (rt *Router) existingSandbox(ctx context.Context, ns, name string) (*sandboxv1beta1.Sandbox, *httpError) {
	sb, herr := rt.lookupSandbox(ctx, ns, name)
	if herr == nil && sb == nil {
		herr = errorf(http.StatusNotFound, "sandbox %s/%s does not exist (or the router has not seen it yet); "+
			"check the name with: kubectl get sandboxes -n %s", ns, name, ns)
	}
	return sb, herr
}

// principalSession is a browser session of path routing (pathroute.Grant).
const principalSession = "browser-session"

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
	case fromCookie && !strings.HasPrefix(tok, pathroute.GrantPrefix):
		return nil, errorf(http.StatusUnauthorized, "the %s cookie of a path route must hold a browser session: get one by opening "+
			"the URL POST %s/%s answers to a client with credentials", tokenCookie, strings.TrimSuffix(rte.base, "/"+strconv.Itoa(rte.port)), pathroute.SessionSegment)
	case !strings.HasPrefix(tok, pathroute.GrantPrefix):
		return rt.authenticate(ctx, r, false)
	case fromCookie:
		if herr := checkCookieSite(r); herr != nil {
			return nil, errorf(http.StatusForbidden, "%s %s came from another site (%s) with the %s cookie: path routes refuse cookie-"+
				"authenticated requests from other sites' pages (cross-site request forgery); send the token in an Authorization "+
				"header, or make the request from the sandbox's own page", r.Method, clip(r.URL.Path), clip(requestSite(r)), tokenCookie)
		}
	}
	g, herr := pathroute.VerifyGrant(rt.cfg.AgentTokenKey, tok, pathroute.UseSession, rt.now())
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
