package router

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router/pathroute"
)

// Route kinds, also the "route" field of the access log.
const (
	kindSandbox = "sandbox" // /sandboxes/{ns}/{name}/...
	kindClaim   = "claim"   // /claims/{ns}/{name}/...
	kindHeader  = "header"  // X-Sandbox-ID
	kindPreview = "preview" // Host {port}-{id}.{domain}
)

// agent-sandbox's routing headers.
const (
	headerID        = contract.SandboxIDHeader
	headerNamespace = contract.SandboxNamespaceHeader
	headerPort      = contract.SandboxPortHeader
	headerTimeout   = contract.SandboxTimeoutHeader
)

// route is where a request goes, before the router looks anything up.
type route struct {
	kind string
	// namespace and name of the sandbox, or of the claim for kindClaim; previewID instead of
	// both for kindPreview until the sandbox is found.
	namespace, name, previewID string
	// port of the sandbox; 0: its agent port.
	port int
	// path and rawPath forwarded (rawPath empty when path needs no escaping).
	path, rawPath string
	// timeout bounds the whole request (X-Sandbox-Timeout); 0: no bound beyond ProxyTimeout's.
	timeout time.Duration
	// e2b marks a route of E2B's sandbox hosts (e2b_envd.go).
	e2b bool
	// base is where the sandbox's "/" is for kindPath ({prefix}/{ns}/{name}/{port}), and the
	// session cookie's path for kindPathSession ({prefix}/{ns}/{name}).
	base string
}

// parseProxyRoute reads a request addressed to a sandbox: by preview host, by a path under the
// path-routing prefix (before X-Sandbox-ID, as agent-sandbox's router does), by X-Sandbox-ID, or
// by a /sandboxes/ or /claims/ path. It returns nil, nil for any other request.
func (rt *Router) parseProxyRoute(r *http.Request) (*route, *httpError) {
	var rte *route
	var herr *httpError
	switch {
	case rt.isPreviewHost(r.Host):
		port, id, _ := contract.ParsePreviewHost(r.Host, rt.cfg.PreviewDomain)
		rte = &route{kind: kindPreview, previewID: id, port: port, path: r.URL.Path, rawPath: r.URL.RawPath}
	case rt.cfg.PathRoutingPrefix != "" && strings.HasPrefix(r.URL.EscapedPath(), rt.cfg.PathRoutingPrefix+"/"):
		rte, herr = prefixRoute(rt.cfg.PathRoutingPrefix, r)
	case r.Header.Get(headerID) != "":
		rte, herr = parseHeaderRoute(r)
	default:
		rte, herr = parsePathRoute(r)
	}
	if herr != nil || rte == nil {
		return nil, herr
	}
	if rte.timeout, herr = rt.parseTimeout(r.Header.Get(headerTimeout)); herr != nil {
		return nil, herr
	}
	return rte, nil
}

func (rt *Router) isPreviewHost(host string) bool {
	_, _, ok := contract.ParsePreviewHost(host, rt.cfg.PreviewDomain)
	return ok
}

// prefixRoute reads a path under the path-routing prefix (pathroute.Parse) as a route of kindPath
// or kindPathSession.
func prefixRoute(prefix string, r *http.Request) (*route, *httpError) {
	pr, herr := pathroute.Parse(prefix, r)
	if herr != nil || pr == nil {
		return nil, herr
	}
	if pr.Session {
		return &route{kind: kindPathSession, namespace: pr.Namespace, name: pr.Name, base: pr.Base}, nil
	}
	return &route{kind: kindPath, namespace: pr.Namespace, name: pr.Name, port: pr.Port, path: pr.Path, rawPath: pr.RawPath,
		base: pr.Base}, nil
}

// parseHeaderRoute reads agent-sandbox's header contract; the path is forwarded unchanged.
func parseHeaderRoute(r *http.Request) (*route, *httpError) {
	rte := &route{kind: kindHeader, name: r.Header.Get(headerID), namespace: r.Header.Get(headerNamespace),
		port: DefaultHeaderPort, path: r.URL.Path, rawPath: r.URL.RawPath}
	if errs := validation.IsDNS1123Label(rte.name); len(errs) > 0 {
		return nil, errorf(http.StatusBadRequest, "X-Sandbox-ID %q is not a sandbox name: %s", clip(rte.name), strings.Join(errs, "; "))
	}
	if rte.namespace == "" {
		rte.namespace = "default"
	}
	if errs := validation.IsDNS1123Label(rte.namespace); len(errs) > 0 {
		return nil, errorf(http.StatusBadRequest, "X-Sandbox-Namespace %q is not a namespace name: %s", clip(rte.namespace), strings.Join(errs, "; "))
	}
	if herr := rte.portFromHeader(r); herr != nil {
		return nil, herr
	}
	return rte, nil
}

// parsePathRoute reads /sandboxes/{ns}/{name}/{rest...} and /claims/{ns}/{name}/{rest...}; the
// sandbox gets /{rest...}. It returns nil, nil for other paths.
func parsePathRoute(r *http.Request) (*route, *httpError) {
	escaped := r.URL.EscapedPath()
	kind, rest := "", ""
	switch {
	case strings.HasPrefix(escaped, "/sandboxes/"):
		kind, rest = kindSandbox, strings.TrimPrefix(escaped, "/sandboxes/")
	case strings.HasPrefix(escaped, "/claims/"):
		kind, rest = kindClaim, strings.TrimPrefix(escaped, "/claims/")
	default:
		return nil, nil
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return nil, errorf(http.StatusBadRequest, "the path %q names no %s: use /%ss/{namespace}/{name}/{path}", clip(escaped), kind, kind)
	}
	rte := &route{kind: kind, namespace: parts[0], name: parts[1], path: "/"}
	if errs := validation.IsDNS1123Label(rte.namespace); len(errs) > 0 {
		return nil, errorf(http.StatusBadRequest, "%q in the path is not a namespace name: %s", clip(rte.namespace), strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(rte.name); len(errs) > 0 {
		return nil, errorf(http.StatusBadRequest, "%q in the path is not a %s name: %s", clip(rte.name), kind, strings.Join(errs, "; "))
	}
	if len(parts) == 3 {
		p, err := url.PathUnescape("/" + parts[2])
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "the path %q is not validly escaped", clip(escaped))
		}
		rte.path = p
		if ep := "/" + parts[2]; ep != (&url.URL{Path: p}).EscapedPath() {
			rte.rawPath = ep
		}
	}
	if herr := rte.portFromHeader(r); herr != nil {
		return nil, herr
	}
	return rte, nil
}

// portFromHeader sets the route's port from X-Sandbox-Port, when the request has one.
func (rte *route) portFromHeader(r *http.Request) *httpError {
	v := r.Header.Get(headerPort)
	if v == "" {
		return nil
	}
	p, herr := parsePortHeader(v)
	if herr != nil {
		return herr
	}
	rte.port = p
	return nil
}

func parsePortHeader(v string) (int, *httpError) {
	p, err := strconv.Atoi(v)
	if err != nil || p < 1 || p > 65535 {
		return 0, errorf(http.StatusBadRequest, "X-Sandbox-Port %q is not a port: give a number from 1 to 65535", clip(v))
	}
	return p, nil
}

// parseTimeout reads X-Sandbox-Timeout, in seconds (fractions allowed), capped by ProxyTimeout.
func (rt *Router) parseTimeout(v string) (time.Duration, *httpError) {
	if v == "" {
		return 0, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s <= 0 || s != s {
		return 0, errorf(http.StatusBadRequest, "X-Sandbox-Timeout %q is not a positive number of seconds", clip(v))
	}
	if d := rt.cfg.ProxyTimeout; s >= d.Seconds() {
		return d, nil
	}
	return time.Duration(s * float64(time.Second)), nil
}
