package router

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Browser path routing (agent-sandbox's --path-routing-prefix): with Config.PathRoutingPrefix
// "/browse", "/browse/{ns}/{name}/{port}/{rest...}" goes to that port of Sandbox ns/name with the
// path "/{rest...}". Browsers cannot set headers, not even on a WebSocket handshake; a page loaded
// under the prefix opens its relative URLs (WebSockets included) under it too, so the route
// travels with every request the page makes.
//
// "/browse/{ns}/{name}/kubox-session" is the router's own: it turns a one-time ticket into the
// session cookie (pathroute_session.go). No port is called that, so no sandbox path is hidden.
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

// sessionSegment is the segment, in the place of the port, of the router's session endpoint.
const sessionSegment = "kubox-session"

// reservedPrefixSegments are first path segments the router serves itself, which a prefix must
// not shadow.
var reservedPrefixSegments = []string{"sandboxes", "claims", "v1", "healthz", "readyz", "ui"}

// validatePathPrefix reports why p cannot be --path-routing-prefix; "" (off) is fine.
func validatePathPrefix(p string) error {
	if p == "" {
		return nil
	}
	shape := fmt.Errorf("--path-routing-prefix %q must be a path such as /browse: starting with /, not ending with /, "+
		"made of letters, digits and - . _ ~ /", p)
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
		return shape
	}
	if strings.ContainsFunc(p, func(c rune) bool { return !prefixChar(c) }) {
		return shape
	}
	segs := strings.Split(p[1:], "/")
	if slices.Contains(segs, ".") || slices.Contains(segs, "..") {
		return shape
	}
	if slices.Contains(reservedPrefixSegments, segs[0]) {
		return fmt.Errorf("--path-routing-prefix %q would hide the router's own paths under /%s/; choose another, such as /browse", p, segs[0])
	}
	return nil
}

// validatePathRoutingHost reports why the path-routing host cannot be used: path routing needs
// one, a bare host name that is not under the preview or E2B domains (whose hosts are other
// routes).
func (c *Config) validatePathRoutingHost() error {
	h := strings.ToLower(c.PathRoutingHost)
	switch {
	case c.PathRoutingPrefix == "" && h == "":
		return nil
	case c.PathRoutingPrefix == "":
		return errors.New("--path-routing-host needs --path-routing-prefix: without it no request is path-routed")
	case h == "":
		return fmt.Errorf("--path-routing-prefix %s needs --path-routing-host: a host name browsers open path routes on "+
			"(sandboxes.example.com, with DNS and TLS for it in front of the router), other than the one they open the "+
			"dashboard (/ui/) on: a sandbox's page on the dashboard's origin could read the viewer's token", c.PathRoutingPrefix)
	case strings.ContainsAny(h, ":/ ") || strings.HasSuffix(h, "."):
		return fmt.Errorf("--path-routing-host %q must be a bare host name such as sandboxes.example.com (no scheme, port or path)", c.PathRoutingHost)
	}
	for _, d := range []string{c.PreviewDomain, c.E2BDomain} {
		if d = strings.ToLower(d); d != "" && (h == d || strings.HasSuffix(h, "."+d)) {
			return fmt.Errorf("--path-routing-host %q is under the domain %s, whose hosts are preview or E2B routes; give a host outside it", c.PathRoutingHost, d)
		}
	}
	return nil
}

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

// prefixChar reports whether c may be in a prefix: what a path needs no escaping for.
func prefixChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~/", c)
}

// parsePrefixRoute reads {prefix}/{ns}/{name}/{port}/{rest...} from the escaped path: the
// namespace, name and port are unescaped, then checked; the rest is forwarded as it came (an
// escaped "/" stays one). It returns nil, nil when path routing is off or the path is not
// under the prefix.
func parsePrefixRoute(prefix string, r *http.Request) (*route, *httpError) {
	escaped := r.URL.EscapedPath()
	if prefix == "" || !strings.HasPrefix(escaped, prefix+"/") {
		return nil, nil
	}
	parts := strings.SplitN(escaped[len(prefix)+1:], "/", 4)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return nil, prefixShapeError(prefix, escaped, "it has too few segments")
	}
	var seg [3]string
	for i := range seg {
		s, err := url.PathUnescape(parts[i])
		if err != nil {
			return nil, prefixShapeError(prefix, escaped, "it is not validly escaped")
		}
		seg[i] = s
	}
	ns, name := seg[0], seg[1]
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return nil, prefixShapeError(prefix, escaped, fmt.Sprintf("%q is not a namespace name: %s", clip(ns), strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, prefixShapeError(prefix, escaped, fmt.Sprintf("%q is not a sandbox name: %s", clip(name), strings.Join(errs, "; ")))
	}
	if seg[2] == sessionSegment && (len(parts) == 3 || parts[3] == "") {
		return &route{kind: kindPathSession, namespace: ns, name: name, base: prefix + "/" + ns + "/" + name}, nil
	}
	port, err := strconv.Atoi(seg[2])
	if err != nil || port < 1 || port > 65535 || strings.TrimLeft(seg[2], "0123456789") != "" {
		return nil, prefixShapeError(prefix, escaped, fmt.Sprintf("%q is not a port: give a number from 1 to 65535", clip(seg[2])))
	}
	rte := &route{kind: kindPath, namespace: ns, name: name, port: port, path: "/",
		base: prefix + "/" + ns + "/" + name + "/" + strconv.Itoa(port)}
	if len(parts) == 4 {
		ep := "/" + parts[3]
		p, err := url.PathUnescape(ep)
		if err != nil {
			return nil, prefixShapeError(prefix, escaped, "it is not validly escaped")
		}
		rte.path = p
		if ep != (&url.URL{Path: p}).EscapedPath() {
			rte.rawPath = ep
		}
	}
	return rte, nil
}

// prefixShapeError is the 400 of a path under the prefix that does not name a sandbox's port.
func prefixShapeError(prefix, escaped, why string) *httpError {
	return errorf(http.StatusBadRequest, "the path %q is under the path-routing prefix %s but %s: use %s/{namespace}/{name}/{port}/{path}",
		clip(escaped), prefix, why, prefix)
}
