package kubox

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kubox-dev/kubox/api/contract"
)

// ErrAttached is returned by the calls an attached sandbox (Attach) cannot make: they need the
// Kubernetes API, and an attached sandbox has no credentials for it.
var ErrAttached = errors.New("attached by URL, with no Kubernetes credentials")

// Attach returns a handle on the sandbox behind baseURL that reaches its agent with token alone,
// without the Kubernetes API: baseURL is a route of kubox-router, either
// <router>/claims/<namespace>/<claim> (with a claim token, Client.MintClaimToken or `kubox token`)
// or <router>/sandboxes/<namespace>/<sandbox> (with a Kubernetes or shared token). Processes,
// files and KeepAlive work; Suspend, Resume and Close need the Kubernetes API and return
// ErrAttached. Attach contacts nothing.
func Attach(baseURL, token string) (*Sandbox, error) {
	ns, name, claim, err := parseRoute(baseURL)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, fmt.Errorf("kubox: Attach(%q) needs a token: a claim token for a /claims/ route "+
			"(Client.MintClaimToken, `kubox token`), or a Kubernetes token the router accepts", baseURL)
	}
	base := newHTTPTransport()
	hc := &http.Client{Transport: &routerErrors{base: &contract.BearerTransport{Token: token, Base: base}}}
	c := &Client{opts: Options{Connection: ConnectRouter, RouterURL: baseURL}, base: base, router: hc}
	return &Sandbox{c: c, ns: ns, name: name, claim: claim,
		attached: &endpoint{base: strings.TrimRight(baseURL, "/"), http: hc}}, nil
}

// parseRoute reads namespace and name from a router route: /claims/ns/claim or
// /sandboxes/ns/name at the end of the URL's path (the router may sit under a prefix).
func parseRoute(baseURL string) (ns, name, claim string, err error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", "", fmt.Errorf("kubox: Attach(%q): not an http(s) URL; give kubox-router's route of the sandbox, "+
			"e.g. http://127.0.0.1:18080/claims/team-a/my-claim", baseURL)
	}
	parts := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	if n := len(parts); n >= 3 && (parts[n-3] == "claims" || parts[n-3] == "sandboxes") {
		ns, _ = url.PathUnescape(parts[n-2])
		name, _ = url.PathUnescape(parts[n-1])
		if parts[n-3] == "claims" {
			return ns, name, name, nil
		}
		return ns, name, "", nil
	}
	return "", "", "", fmt.Errorf("kubox: Attach(%q): the path does not end in /claims/<namespace>/<claim> or "+
		"/sandboxes/<namespace>/<sandbox>, the router's routes of a sandbox", baseURL)
}

// needsKube returns ErrAttached, naming op, for a sandbox attached by URL.
func (s *Sandbox) needsKube(op string) error {
	if s.attached == nil {
		return nil
	}
	return fmt.Errorf("kubox: %s %s: %w; it needs a Client (kubox.New with a kubeconfig) and Connect or Open", op, s.object(), ErrAttached)
}
