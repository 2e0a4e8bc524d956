package pathroute

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubox-dev/kubox/internal/router/httperr"
)

// SessionSegment is the segment, in the place of the port, of the router's session endpoint.
const SessionSegment = "kubox-session"

// reservedPrefixSegments are first path segments the router serves itself, which a prefix must
// not shadow.
var reservedPrefixSegments = []string{"sandboxes", "claims", "v1", "healthz", "readyz", "ui"}

// ValidatePrefix reports why p cannot be --path-routing-prefix; "" (off) is fine.
func ValidatePrefix(p string) error {
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

// ValidateHost reports why host cannot be the path-routing host of prefix: path routing needs
// one, a bare host name that is not under domains (the preview and E2B domains, whose hosts are
// other routes).
func ValidateHost(prefix, host string, domains ...string) error {
	h := strings.ToLower(host)
	switch {
	case prefix == "" && h == "":
		return nil
	case prefix == "":
		return errors.New("--path-routing-host needs --path-routing-prefix: without it no request is path-routed")
	case h == "":
		return fmt.Errorf("--path-routing-prefix %s needs --path-routing-host: a host name browsers open path routes on "+
			"(sandboxes.example.com, with DNS and TLS for it in front of the router), other than the one they open the "+
			"dashboard (/ui/) on: a sandbox's page on the dashboard's origin could read the viewer's token", prefix)
	case strings.ContainsAny(h, ":/ ") || strings.HasSuffix(h, "."):
		return fmt.Errorf("--path-routing-host %q must be a bare host name such as sandboxes.example.com (no scheme, port or path)", host)
	}
	for _, d := range domains {
		if d = strings.ToLower(d); d != "" && (h == d || strings.HasSuffix(h, "."+d)) {
			return fmt.Errorf("--path-routing-host %q is under the domain %s, whose hosts are preview or E2B routes; give a host outside it", host, d)
		}
	}
	return nil
}

// prefixChar reports whether c may be in a prefix: what a path needs no escaping for.
func prefixChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~/", c)
}

// Route is a request under the path-routing prefix: a port of Sandbox Namespace/Name, or (Session)
// the router's session endpoint of that sandbox.
type Route struct {
	Namespace, Name string
	// Session marks {prefix}/{ns}/{name}/kubox-session; Port, Path and RawPath are then zero.
	Session bool
	Port    int
	// Path and RawPath are forwarded (RawPath empty when Path needs no escaping).
	Path, RawPath string
	// Base is where the sandbox's "/" is ({prefix}/{ns}/{name}/{port}), and for Session the
	// session cookie's path ({prefix}/{ns}/{name}).
	Base string
}

// Parse reads {prefix}/{ns}/{name}/{port}/{rest...} from the escaped path: the namespace, name
// and port are unescaped, then checked; the rest is forwarded as it came (an escaped "/" stays
// one). It returns nil, nil when path routing is off or the path is not under the prefix.
func Parse(prefix string, r *http.Request) (*Route, *httperr.Error) {
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
		return nil, prefixShapeError(prefix, escaped, fmt.Sprintf("%q is not a namespace name: %s", httperr.Clip(ns), strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, prefixShapeError(prefix, escaped, fmt.Sprintf("%q is not a sandbox name: %s", httperr.Clip(name), strings.Join(errs, "; ")))
	}
	if seg[2] == SessionSegment && (len(parts) == 3 || parts[3] == "") {
		return &Route{Session: true, Namespace: ns, Name: name, Base: prefix + "/" + ns + "/" + name}, nil
	}
	port, err := strconv.Atoi(seg[2])
	if err != nil || port < 1 || port > 65535 || strings.TrimLeft(seg[2], "0123456789") != "" {
		return nil, prefixShapeError(prefix, escaped, fmt.Sprintf("%q is not a port: give a number from 1 to 65535", httperr.Clip(seg[2])))
	}
	rte := &Route{Namespace: ns, Name: name, Port: port, Path: "/", Base: prefix + "/" + ns + "/" + name + "/" + strconv.Itoa(port)}
	if len(parts) == 4 {
		ep := "/" + parts[3]
		p, err := url.PathUnescape(ep)
		if err != nil {
			return nil, prefixShapeError(prefix, escaped, "it is not validly escaped")
		}
		rte.Path = p
		if ep != (&url.URL{Path: p}).EscapedPath() {
			rte.RawPath = ep
		}
	}
	return rte, nil
}

// prefixShapeError is the 400 of a path under the prefix that does not name a sandbox's port.
func prefixShapeError(prefix, escaped, why string) *httperr.Error {
	return httperr.Errorf(http.StatusBadRequest, "the path %q is under the path-routing prefix %s but %s: use %s/{namespace}/{name}/{port}/{path}",
		httperr.Clip(escaped), prefix, why, prefix)
}
