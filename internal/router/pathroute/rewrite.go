package pathroute

import (
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Responses of path routes. Every sandbox served under the prefix shares the router's origin, so
// two headers are always confined to the sandbox's port ({prefix}/{ns}/{name}/{port}, "base"):
// Set-Cookie's Path (a cookie an app sets for "/" would reach every other sandbox's app) and
// Service-Worker-Allowed (a service worker allowed "/" would control every other sandbox's
// pages). With Config.PathRoutingRewriteResponses, Location and Content-Location that point at
// the sandbox's root ("/login", or an absolute URL naming the sandbox's address or the router's
// host) are moved under base too, so a redirect keeps the browser inside the sandbox's paths.
// Bodies are not rewritten: apps that build absolute links in HTML need a base path of their own.

// ConfineResponse applies the above to a sandbox's response to a path-routed request, whose
// sandbox's "/" is base and whose address is addr: rewrite is Config.PathRoutingRewriteResponses.
func ConfineResponse(res *http.Response, base, addr string, rewrite bool) {
	h := res.Header
	confineCookiePaths(h, base)
	confineServiceWorker(h, base, res.Request.URL.Path)
	if !rewrite {
		return
	}
	hosts := []string{addr, res.Request.Host, res.Request.Header.Get("X-Forwarded-Host")}
	for _, k := range []string{"Location", "Content-Location"} {
		if v := h.Get(k); v != "" {
			h.Set(k, rewriteLocation(v, base, hosts))
		}
	}
}

// rewriteLocation moves a Location under base when it points at the sandbox's own root: an
// absolute path, or an absolute http(s) URL whose host is one of hosts (the sandbox's address,
// or the router's host the client used). Relative references resolve under base already; other
// hosts and URLs already under base are left alone.
func rewriteLocation(v, base string, hosts []string) string {
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Opaque != "" || u.User != nil:
		return v
	case u.Scheme == "" && u.Host == "":
		if !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") || underBase(u.EscapedPath(), base) {
			return v
		}
		return base + v
	case (u.Scheme != "http" && u.Scheme != "https") || !hostIn(u.Host, u.Scheme, hosts) || underBase(u.EscapedPath(), base):
		return v
	}
	i := strings.Index(v, "://") + len("://")
	authority, suffix := v[i:], ""
	if j := strings.IndexAny(authority, "/?#"); j >= 0 {
		authority, suffix = authority[:j], authority[j:]
	}
	if !strings.HasPrefix(suffix, "/") {
		suffix = "/" + suffix
	}
	if hostIn(u.Host, u.Scheme, hosts[:1]) {
		return base + suffix // the sandbox's own address means nothing to the browser
	}
	return v[:i] + authority + base + suffix
}

// hostIn reports whether host is one of hosts (ignoring case, a trailing dot, the default port).
func hostIn(host, scheme string, hosts []string) bool {
	for _, h := range hosts {
		if h != "" && strings.EqualFold(CanonicalHost(host, scheme), CanonicalHost(h, scheme)) {
			return true
		}
	}
	return false
}

// underBase reports whether the escaped path p is base or below it.
func underBase(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+"/")
}

// confineCookiePaths moves the Path attribute of every Set-Cookie under base: "Path=/" becomes
// "Path={base}/". A cookie without Path gets the request's directory, which is under base already.
func confineCookiePaths(h http.Header, base string) {
	for i, v := range h.Values("Set-Cookie") {
		attrs := strings.Split(v, ";")
		for j, a := range attrs[1:] {
			k, p, ok := strings.Cut(a, "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
				continue
			}
			p = strings.TrimSpace(p)
			if strings.HasPrefix(p, "/") {
				attrs[j+1] = " Path=" + confinedPath(base, p)
			}
		}
		h["Set-Cookie"][i] = strings.Join(attrs, ";")
	}
}

// confineServiceWorker moves Service-Worker-Allowed under base, or to base itself when it
// would leave it; a value naming an origin is removed.
func confineServiceWorker(h http.Header, base, scriptPath string) {
	const k = "Service-Worker-Allowed"
	v := h.Get(k)
	if v == "" {
		return
	}
	if strings.HasPrefix(v, "//") || strings.Contains(v, ":") || strings.Contains(v, "\\") {
		h.Del(k)
		return
	}
	p, _, _ := strings.Cut(v, "?")
	p, _, _ = strings.Cut(p, "#")
	if !strings.HasPrefix(p, "/") {
		p = path.Dir(scriptPath) + "/" + p
	}
	h.Set(k, confinedPath(base, p))
}

// confinedPath is the raw sandbox path p (its "/" being base) as the browser sees it, kept under
// base: dot segments, escaped or not, cannot climb out. An app that knows its prefix (p under
// base already) keeps its path.
func confinedPath(base, p string) string {
	p = strings.NewReplacer("%2e", ".", "%2E", ".").Replace(p)
	clean := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	if underBase(clean, base) {
		return clean
	}
	return base + clean
}

// CanonicalHost drops a trailing dot and the scheme's default port.
func CanonicalHost(host, scheme string) string {
	if h, p, err := net.SplitHostPort(host); err == nil && (p == "80" && scheme == "http" || p == "443" && scheme == "https") {
		host = h
	}
	return strings.TrimSuffix(host, ".")
}
