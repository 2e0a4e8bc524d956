package router

import (
	"context"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/kubox-dev/kubox/internal/router/claimtoken"
	"github.com/kubox-dev/kubox/internal/router/ui"
)

// kindUI is the dashboard's route in the access log.
const kindUI = "ui"

// newDashboard builds the web dashboard (/ui/, internal/router/ui), which acts with each
// viewer's own token. The router lends it two things only it can do: review a token as every
// token is reviewed, and reach a sandbox's agent for a viewer its connect route would admit.
func (rt *Router) newDashboard(restConfig *rest.Config) (*ui.Handler, error) {
	return ui.New(ui.Options{RestConfig: restConfig, Authenticate: rt.dashboardViewer, Agent: rt.dashboardAgent,
		Namespace: rt.cfg.Namespace, MaxUploadBytes: rt.cfg.MaxRequestBodyBytes, MetricsURL: rt.cfg.UIMetricsURL, Log: rt.log})
}

// serveDashboard serves /ui/.
func (rt *Router) serveDashboard(w http.ResponseWriter, r *http.Request) {
	infoFrom(r.Context()).route = kindUI
	// The dashboard's window is its own: a page of another origin (a sandbox's, on the
	// path-routing or a preview host) that opens it gets no handle to it, nor it to that page.
	w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
	rt.dashboard.ServeHTTP(w, r)
}

// dashboardViewer reviews a viewer's Kubernetes token. Claim tokens and the shared token name
// no identity the dashboard could act as.
func (rt *Router) dashboardViewer(r *http.Request, tok string) (string, *ui.Error) {
	const how = "log in with a Kubernetes token: kubectl create token <serviceaccount>, or your kubeconfig's user token"
	if strings.HasPrefix(tok, claimtoken.Prefix) || rt.shared.Matches(tok) {
		return "", &ui.Error{Code: http.StatusUnauthorized, Message: "a claim token or the router's shared token names no Kubernetes identity; " + how}
	}
	u, herr := rt.reviewKubeToken(r.Context(), r, tok, "token", func() string { return how })
	if herr != nil {
		rt.recordDecision(herr)
		return "", &ui.Error{Code: herr.Code, Message: herr.Msg}
	}
	infoFrom(r.Context()).principal = u.Name
	return u.Name, nil
}

// dashboardAgent admits a viewer to sandbox ns/name as the /sandboxes/ route does (RBAC on
// sandboxes/connect, then existence and readiness) and returns its agent's address and token.
func (rt *Router) dashboardAgent(ctx context.Context, r *http.Request, tok, ns, name string) (ui.Agent, *ui.Error) {
	a, herr := rt.admitDashboard(ctx, r, tok, ns, name)
	if herr != nil {
		return ui.Agent{}, &ui.Error{Code: herr.Code, Message: herr.Msg}
	}
	return a, nil
}

func (rt *Router) admitDashboard(ctx context.Context, r *http.Request, tok, ns, name string) (ui.Agent, *httpError) {
	if !rt.synced.Load() {
		return ui.Agent{}, errorf(http.StatusServiceUnavailable, "the router is still loading Sandboxes from the Kubernetes API; retry shortly")
	}
	u, herr := rt.reviewKubeToken(ctx, r, tok, "token", rt.acceptedCredentials)
	if herr == nil {
		herr = rt.authorize(ctx, &principal{kind: principalUser, user: u}, access{namespace: ns, name: name})
	}
	rt.recordDecision(herr)
	if herr != nil {
		return ui.Agent{}, herr
	}
	info := infoFrom(ctx)
	info.namespace, info.name = ns, name
	sb, herr := rt.lookupSandbox(ctx, ns, name)
	if herr != nil {
		return ui.Agent{}, herr
	}
	if sb == nil {
		return ui.Agent{}, errorf(http.StatusNotFound, "sandbox %s/%s does not exist (or the router has not seen it yet)", ns, name)
	}
	t, herr := rt.resolveTarget(ctx, sb, 0)
	if herr != nil {
		return ui.Agent{}, herr
	}
	if t.agentToken == "" {
		return ui.Agent{}, noAgentPort(sb)
	}
	a := ui.Agent{URL: "http://" + t.addr, Token: t.agentToken}
	if sb.Spec.IdlePolicy != nil {
		// A terminal open, a file moving: the sandbox is in use.
		a.Done = rt.activity.Begin(sb)
	}
	return a, nil
}
