package router

import (
	"net/http"
	"net/url"
	"strings"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/pathroute"
)

// Preview hosts are where browsers meet sandboxes, and every preview host of a router shares one
// site (the parent of --preview-domain): a page one sandbox serves is same-site with every other
// sandbox's preview hosts, and the browser attaches the kubox-token cookie to requests it sends
// them. The rules below keep that cookie from being used by anyone but the page it belongs to.

// checkPreviewPort refuses the ports the sandbox records as its agent's on a preview host:
// they run code (/execute, Connect's process API) with the sandbox's agent token, which the
// router adds, and no browser page needs them. Clients reach them by path or header routes
// with an Authorization header, which a page cannot forge.
func (rt *Router) checkPreviewPort(sb *sandboxv1beta1.Sandbox, port int) *httpError {
	what := agentPortRole(sb, port)
	if what == "" {
		return nil
	}
	return errorf(http.StatusForbidden, "port %d of sandbox %s/%s is %s, which preview hosts never serve (a web page could "+
		"run commands through it); use /sandboxes/%s/%s/... with an Authorization header instead", port, sb.Namespace, sb.Name,
		what, sb.Namespace, sb.Name)
}

// agentPortRole names what port is to the sandbox's kubox-agent, or "" when it is none of the
// agent's. Without a recorded agent port the router adds no token, and no port is the agent's.
func agentPortRole(sb *sandboxv1beta1.Sandbox, port int) string {
	agent := sb.Status.Agent
	switch {
	case agent == nil:
		return ""
	case port == int(agent.Port):
		return "its kubox-agent's API port"
	case agent.CompatibilityPort != 0 && port == int(agent.CompatibilityPort):
		return "its kubox-agent's compatibility port (agent-sandbox's runtime API)"
	case isAgentPort(agent, port):
		return "one of its kubox-agent's sandboxd ports (agent-sandbox v1's process and file API)"
	case servesCodeInterpreter(sb, port):
		return "its kubox-agent's code interpreter (E2B's /execute)"
	}
	return ""
}

// checkCookieSite refuses a request authenticated by the kubox-token cookie that a browser sent
// on behalf of another site or another sandbox's page (cross-site request forgery). Allowed:
//   - Sec-Fetch-Site "same-origin" (the preview host's own page) or "none" (the user typed the
//     address, or opened a bookmark);
//   - a top-level navigation with GET or HEAD from elsewhere (a link to the preview): it cannot
//     read the answer, and an app's GET must not change anything;
//   - without Sec-Fetch-Site (an older browser, or no browser at all): an Origin equal to the
//     request's own host, or no Origin on a GET or HEAD; no Origin on other methods means no
//     browser (every current browser sends Origin with them), so curl --cookie still works.
//
// "same-site" is refused like "cross-site": another sandbox's preview host is same-site.
// Requests with an Authorization header are not checked: a page cannot set it.
func checkCookieSite(r *http.Request) *httpError {
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead
	site := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")))
	origin := r.Header.Get("Origin")
	navigation := safe && strings.EqualFold(r.Header.Get("Sec-Fetch-Mode"), "navigate") &&
		strings.EqualFold(r.Header.Get("Sec-Fetch-Dest"), "document")
	switch {
	case site == "same-origin" || site == "none":
		if origin == "" || sameOrigin(origin, r.Host) {
			return nil
		}
	case site != "":
		if navigation && (origin == "" || sameOrigin(origin, r.Host)) {
			return nil
		}
	case origin == "":
		return nil // no browser, or a browser's GET/HEAD: see above
	case sameOrigin(origin, r.Host):
		return nil
	}
	from := origin
	if from == "" {
		from = "a " + site + " page"
	}
	return errorf(http.StatusForbidden, "%s %s on preview host %s came from %s with the %s cookie: preview hosts refuse "+
		"cookie-authenticated requests from other sites and other sandboxes' pages (cross-site request forgery); send the "+
		"token in an Authorization header, or make the request from the preview host's own page", r.Method, clip(r.URL.Path),
		clip(r.Host), clip(from), tokenCookie)
}

// sameOrigin reports whether an Origin header names the host the request was sent to. The
// scheme is not compared: TLS ends in front of the router, which sees plain HTTP either way.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (sandboxed frames, data: URLs) is never the preview's own page
	}
	return strings.EqualFold(pathroute.CanonicalHost(u.Host, u.Scheme), pathroute.CanonicalHost(host, u.Scheme))
}
