package router

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// CORS for the agent API routes (/sandboxes/ and /claims/), so a web page holding a claim token
// can call a sandbox with @kubox/sdk/web. Off unless --cors-allowed-origins names the page's
// origin: a browser then lets that origin read the answers, and sends its preflights, which
// the router answers itself (they carry no token). Credentials (cookies) are never allowed: the
// SDK sends its token in the Authorization header, and the path-routing and dashboard cookies
// must stay out of other origins' reach.
const (
	corsAllowMethods = "GET, POST, PUT, DELETE"
	// corsAllowHeaders are the request headers the SDK sends that a browser does not allow by
	// itself: the token, Connect's headers and the router's timeout.
	corsAllowHeaders = "Authorization, Content-Type, Connect-Protocol-Version, Connect-Timeout-Ms, " + headerTimeout
	// corsMaxAge is how long, in seconds, a browser may reuse a preflight's answer.
	corsMaxAge = "600"
)

// serveCORS adds the CORS headers to a request for an agent API route from an allowed origin,
// and answers its preflight; it says whether it answered. Other requests pass untouched: a
// browser then keeps the answer from the page.
func (rt *Router) serveCORS(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || !slices.Contains(rt.cfg.CORSAllowedOrigins, origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}

// validateOrigin checks that o is a browser's Origin: scheme://host[:port], nothing else.
func validateOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || o != u.Scheme+"://"+u.Host {
		return fmt.Errorf("CORS origin %q must be a page's origin, scheme://host[:port] such as https://app.example.com, "+
			"without a path or a trailing slash (and not *: name each origin)", o)
	}
	return nil
}
