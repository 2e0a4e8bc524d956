package router

import (
	"context"
	"net/http"
	"strings"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/router/e2b"
	"github.com/kubox-dev/kubox/internal/router/proxy"
	"github.com/kubox-dev/kubox/internal/router/ui"
)

// Paths the router serves itself on its main listener.
const (
	healthPath    = "/healthz"
	readyPath     = "/readyz"
	mintPrefix    = "/v1/claims/"
	mintSuffix    = "/token"
	sandboxPrefix = "/sandboxes/"
	claimPrefix   = "/claims/"
)

// serveHTTP routes a request: preview host, X-Sandbox-ID, the router's own paths, then the
// /sandboxes/ and /claims/ paths. See the package documentation.
func (rt *Router) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if rt.serveE2B(w, r) {
		return
	}
	rte, herr := rt.parseProxyRoute(r)
	if herr == nil {
		herr = rt.checkPathRoutingOrigin(r, rte)
	}
	switch {
	case herr != nil:
		writeError(w, herr)
	case rte != nil && rte.kind == kindPathSession:
		rt.servePathSession(w, r, rte)
	case rte != nil && (rte.kind == kindSandbox || rte.kind == kindClaim) && rt.serveCORS(w, r):
		// a browser's CORS preflight, answered
	case rte != nil:
		rt.serveProxy(w, r, rte)
	case strings.HasPrefix(r.URL.Path, ui.Prefix) || r.URL.Path+"/" == ui.Prefix:
		rt.serveDashboard(w, r)
	case r.URL.Path == healthPath:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case r.URL.Path == readyPath:
		rt.serveReady(w)
	case strings.HasPrefix(r.URL.Path, mintPrefix) && strings.HasSuffix(r.URL.Path, mintSuffix):
		rt.serveMint(w, r)
	default:
		writeError(w, errorf(http.StatusBadRequest, "the router does not know where %s %q goes: use /sandboxes/{namespace}/{name}/..., "+
			"/claims/{namespace}/{name}/..., the header X-Sandbox-ID (with X-Sandbox-Namespace and X-Sandbox-Port), "+
			"or POST /v1/claims/{namespace}/{name}/token", r.Method, clip(r.URL.Path)))
	}
}

func (rt *Router) serveReady(w http.ResponseWriter) {
	if !rt.synced.Load() {
		writeError(w, errorf(http.StatusServiceUnavailable, "the router is still loading Sandboxes and SandboxClaims from the Kubernetes API"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// serveProxy authenticates, authorizes, resolves and forwards a request for a sandbox.
func (rt *Router) serveProxy(w http.ResponseWriter, r *http.Request, rte *route) {
	info := infoFrom(r.Context())
	info.route = rte.kind
	if !rt.synced.Load() {
		writeError(w, errorf(http.StatusServiceUnavailable, "the router is still loading Sandboxes and SandboxClaims from the Kubernetes API; retry shortly"))
		return
	}
	ctx := r.Context()
	t, herr := rt.admit(ctx, r, rte)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if rte.e2b {
		if tok := e2b.EnvdToken(r, rte.port, t.sandbox, rt.cfg.AgentTokenKey); tok != "" {
			t.agentToken = tok
		}
	}
	if herr := rt.limitBody(w, r); herr != nil {
		writeError(w, herr)
		return
	}
	if rte.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rte.timeout)
		defer cancel()
	}
	if t.sandbox.Spec.IdlePolicy != nil {
		// Until the response ends: ServeHTTP returns when a stream or an upgraded connection does.
		defer rt.activity.Begin(t.sandbox)()
	}
	w, r, rec := rt.beginAudit(w, r, rte, t)
	defer func() { rec.End(infoFrom(ctx).err) }()
	rt.proxy.ServeHTTP(w, r.WithContext(ctx), &proxy.Target{Namespace: t.sandbox.Namespace, Name: t.sandbox.Name, Addr: t.addr,
		Path: rte.path, RawPath: rte.rawPath, KeepHost: rte.kind == kindPreview, AgentToken: t.agentToken, PathBase: rte.base})
}

// admit runs the checks in an order that reveals nothing to a stranger: credentials (401), then
// permission (403), then whether the sandbox exists (404), is suspended (woken, or 403 and 503)
// and is ready (503).
func (rt *Router) admit(ctx context.Context, r *http.Request, rte *route) (*target, *httpError) {
	info := infoFrom(ctx)
	p := &principal{kind: principalAnonymous}
	// The unauthenticated mode admits header routes without credentials only while no shared
	// token is configured: a token an operator configured is always enforced (as agent-sandbox's
	// router does with ROUTER_AUTH_TOKEN).
	if rte.kind != kindHeader || !rt.cfg.AllowUnauthenticatedHeaderRouting || len(rt.cfg.SharedToken) > 0 {
		var herr *httpError
		if p, herr = rt.authenticateRoute(ctx, r, rte); herr != nil {
			rt.recordDecision(herr)
			return nil, herr
		}
	}
	info.principal = p.name()
	var previewSandbox *sandboxv1beta1.Sandbox
	if rte.kind == kindPreview {
		sb, herr := rt.sandboxByPreviewID(ctx, rte.previewID)
		if herr != nil {
			return nil, herr
		}
		rte.namespace, rte.name = sb.Namespace, sb.Name
		previewSandbox = sb
	}
	info.namespace, info.name = rte.namespace, rte.name
	herr := rt.authorize(ctx, p, access{namespace: rte.namespace, name: rte.name, claim: rte.kind == kindClaim})
	rt.recordDecision(herr)
	if herr != nil {
		return nil, herr
	}
	if previewSandbox != nil {
		if herr := rt.checkPreviewPort(previewSandbox, rte.port); herr != nil {
			return nil, herr
		}
	}
	sandboxName := rte.name
	var claim *extv1beta1.SandboxClaim
	if rte.kind == kindClaim {
		if claim, herr = rt.boundClaim(ctx, rte.namespace, rte.name); herr != nil {
			return nil, herr
		}
		sandboxName = claim.Status.Sandbox.Name
	}
	sb, herr := rt.lookupSandbox(ctx, rte.namespace, sandboxName)
	if herr != nil {
		return nil, herr
	}
	if sb == nil {
		return nil, errorf(http.StatusNotFound, "sandbox %s/%s does not exist (or the router has not seen it yet); "+
			"check the name with: kubectl get sandboxes -n %s", rte.namespace, sandboxName, rte.namespace)
	}
	if herr := checkClaimOwns(p, claim, sb); herr != nil {
		return nil, herr
	}
	if herr := checkPathRoute(p, rte, sb); herr != nil {
		return nil, herr
	}
	woken, herr := rt.wakeIfSuspended(ctx, p, rte, sb)
	if herr != nil {
		return nil, herr
	}
	if woken != sb {
		// A woken sandbox records its agent's ports only now: browser routes must refuse them
		// before resolveTarget adds the agent token to them.
		if herr := rt.checkBrowserPort(p, rte, woken); herr != nil {
			return nil, herr
		}
		sb = woken
	}
	return rt.resolveTarget(ctx, sb, rte.port)
}

// boundClaim returns the claim ns/name, which names the sandbox bound to it.
func (rt *Router) boundClaim(ctx context.Context, ns, name string) (*extv1beta1.SandboxClaim, *httpError) {
	c, herr := rt.lookupClaim(ctx, ns, name)
	if herr != nil {
		return nil, herr
	}
	if c == nil {
		return nil, errorf(http.StatusNotFound, "SandboxClaim %s/%s does not exist; check the name with: kubectl get sandboxclaims -n %s", ns, name, ns)
	}
	if c.Status.Sandbox.Name == "" {
		return nil, errorf(http.StatusServiceUnavailable, "SandboxClaim %s/%s has no sandbox yet; wait until it is Ready and retry", ns, name)
	}
	return c, nil
}

// checkClaimOwns makes sure a request that reaches sb through a claim (the claim route, or a
// claim token) reaches the claim's own sandbox: one whose controller owner reference is the
// claim's UID, as the claim controller sets it when it binds or creates the sandbox. The name in
// the claim's status alone is not enough: once the claim's sandbox is gone, anyone may create
// another Sandbox of that name.
func checkClaimOwns(p *principal, claim *extv1beta1.SandboxClaim, sb *sandboxv1beta1.Sandbox) *httpError {
	if claim != nil && !claimOwns(sb, claim.UID) {
		return errorf(http.StatusNotFound, "SandboxClaim %s/%s has no sandbox: Sandbox %s, which its status names, is not the claim's "+
			"(its sandbox is gone and another Sandbox has the name); create a new claim", claim.Namespace, claim.Name, sb.Name)
	}
	if p.kind == principalClaim && !claimOwns(sb, p.claim.UID) {
		return errorf(http.StatusForbidden, "the claim token opens only the sandbox of SandboxClaim %s/%s, and Sandbox %s/%s is not "+
			"that claim's (the claim's sandbox is gone and another Sandbox has the name); create a new claim", p.claim.Namespace,
			p.claim.Claim, sb.Namespace, sb.Name)
	}
	return nil
}

// limitBody refuses bodies declared larger than the limit and cuts off those that grow past it.
func (rt *Router) limitBody(w http.ResponseWriter, r *http.Request) *httpError {
	max := rt.cfg.MaxRequestBodyBytes
	if max <= 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength > max {
		return errorf(http.StatusRequestEntityTooLarge, "the request body has %d bytes, more than the router's limit of %d (--max-request-body-bytes)", r.ContentLength, max)
	}
	r.Body = http.MaxBytesReader(w, r.Body, max)
	return nil
}

// checkBrowserPort refuses, on the routes browsers use (preview hosts, path routes), the ports
// the sandbox records as its agent's.
func (rt *Router) checkBrowserPort(p *principal, rte *route, sb *sandboxv1beta1.Sandbox) *httpError {
	switch rte.kind {
	case kindPreview:
		return rt.checkPreviewPort(sb, rte.port)
	case kindPath:
		return checkPathRoute(p, rte, sb)
	}
	return nil
}
