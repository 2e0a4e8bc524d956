package router

import (
	"context"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/e2b"
)

// kindE2BAPI is the control API's route in the access log; sandbox hosts are logged as the
// claim route they are.
const kindE2BAPI = "e2b-api"

// newE2B builds E2B's control API (internal/router/e2b), which acts with each caller's token.
// The router lends it what only it can do: review tokens, mint claim tokens, read its cache.
func (rt *Router) newE2B(restConfig *rest.Config) (*e2b.API, error) {
	kube, err := e2b.NewClient(restConfig, client.Options{Scheme: newScheme(), Mapper: rt.writer.RESTMapper()})
	if err != nil {
		return nil, err
	}
	userPrincipal := func(u *authn.User) *principal { return &principal{kind: principalUser, user: u} }
	return e2b.New(e2b.Config{Domain: rt.cfg.E2BDomain, Namespace: rt.cfg.E2BNamespace, WakeTimeout: rt.cfg.WakeTimeout,
		ClaimTokenMaxTTL: rt.cfg.ClaimTokenMaxTTL}, e2b.Deps{
		Kube: kube, Now: rt.now, Log: rt.log, Metrics: rt.metrics, Events: rt.events, Synced: rt.synced.Load,
		Claim: rt.lookupClaim, Sandbox: rt.lookupSandbox, CheckNamespace: rt.checkNamespace,
		IsSharedToken: rt.shared.Matches, ReviewToken: rt.reviewKubeToken,
		AuthorizeMint: func(ctx context.Context, u *authn.User, ns, name string) *httpError {
			return rt.authorizeMint(ctx, userPrincipal(u), ns, name)
		},
		MintClaimToken: func(ctx context.Context, u *authn.User, ns, name string, expiry time.Time) (string, *httpError) {
			tok, _, herr := rt.mintClaimToken(ctx, userPrincipal(u), ns, name, expiry)
			return tok, herr
		},
		RecordDecision: rt.recordDecision,
		Observe: func(r *http.Request, principal, ns, name string) {
			info := infoFrom(r.Context())
			info.principal, info.namespace, info.name = principal, ns, name
		},
	}), nil
}

// serveE2B serves r when it is for one of E2B's hosts, and reports whether it was.
func (rt *Router) serveE2B(w http.ResponseWriter, r *http.Request) bool {
	api, port, id, ok := e2b.ParseHost(rt.cfg.E2BDomain, r.Host)
	switch {
	case !ok:
		return false
	case api:
		infoFrom(r.Context()).route = kindE2BAPI
		rt.e2b.ServeHTTP(w, r)
	default:
		rt.serveE2BSandbox(w, r, port, id)
	}
	return true
}

// serveE2BSandbox forwards a request for "{port}-{id}.{E2BDomain}" to port of the sandbox of
// claim id, as the /claims/ route does (e2b.SandboxNamespace).
func (rt *Router) serveE2BSandbox(w http.ResponseWriter, r *http.Request, port int, id string) {
	ns, herr := e2b.SandboxNamespace(r, rt.cfg.E2BNamespace, rt.now())
	if herr != nil {
		writeError(w, herr)
		return
	}
	rte := &route{kind: kindClaim, namespace: ns, name: id, port: port, path: r.URL.Path, rawPath: r.URL.RawPath, e2b: true}
	if rte.timeout, herr = rt.parseTimeout(r.Header.Get(headerTimeout)); herr != nil {
		writeError(w, herr)
		return
	}
	rt.serveProxy(w, r, rte)
}
