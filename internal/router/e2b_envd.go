package router

import (
	"net/http"
	"strings"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/router/claimtoken"
)

// serveE2BSandbox forwards a request for "{port}-{id}.{E2BDomain}" to port of the sandbox of
// claim id, the way the /claims/ route does: authorized by the claim token E2B's SDKs send as
// envd's access token (X-Access-Token), or by any credential the router accepts in
// Authorization. The claim's namespace is the claim token's, else the router's E2B namespace.
// On envd's port the router puts the sandbox's agent token in X-Access-Token (e2bForward): the
// caller never holds it.
func (rt *Router) serveE2BSandbox(w http.ResponseWriter, r *http.Request, port int, id string) {
	e2bCredentials(r)
	ns := rt.cfg.E2BNamespace
	if c, err := claimtoken.Peek(strings.TrimPrefix(r.Header.Get(contract.AuthorizationHeader), contract.BearerScheme+" "), rt.now()); err == nil {
		ns = c.Namespace
	}
	if ns == "" {
		writeError(w, errorf(http.StatusUnauthorized, "send the sandbox's envd access token (the envdAccessToken E2B's API answered) in %s",
			contract.E2BAccessTokenHeader))
		return
	}
	rte := &route{kind: kindClaim, namespace: ns, name: id, port: port, path: r.URL.Path, rawPath: r.URL.RawPath, e2b: true}
	var herr *httpError
	if rte.timeout, herr = rt.parseTimeout(r.Header.Get(headerTimeout)); herr != nil {
		writeError(w, herr)
		return
	}
	rt.serveProxy(w, r, rte)
}

// e2bCredentials makes the access token E2B's SDKs send the request's bearer token. They also
// send `Authorization: Basic <user>:` to name a user, which no sandbox of kubox reads.
func e2bCredentials(r *http.Request) {
	h := r.Header
	if tok := h.Get(contract.E2BAccessTokenHeader); tok != "" {
		h.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+tok)
		h.Del(contract.E2BAccessTokenHeader)
		return
	}
	if scheme, _, _ := strings.Cut(h.Get(contract.AuthorizationHeader), " "); strings.EqualFold(scheme, "Basic") {
		h.Del(contract.AuthorizationHeader)
	}
}

// e2bForward gives the request for envd's port the sandbox's agent token, as envd's access
// token; the proxy puts it in Authorization too.
func (rt *Router) e2bForward(r *http.Request, rte *route, t *target) {
	if !rte.e2b || rte.port != contract.E2BEnvdPort || t.sandbox.Spec.Agent == nil {
		return
	}
	t.agentToken = contract.DeriveAgentToken(rt.cfg.AgentTokenKey, t.sandbox.UID)
	r.Header.Set(contract.E2BAccessTokenHeader, t.agentToken)
}
