package kubox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubox-dev/kubox/api/contract"
)

// errNoBearer explains why the router cannot be used with a kubeconfig that authenticates by
// client certificate only.
var errNoBearer = fmt.Errorf("kubox: %w: kubox-router authenticates bearer tokens, and this kubeconfig has none "+
	"(it authenticates with a client certificate, or not at all): set Options.Token to a token the router accepts — "+
	"a Kubernetes service account token (`kubectl create token <service-account>`), a claim token "+
	"(Client.MintClaimToken, `kubox token`) or the router's shared token — or use a kubeconfig with a token or an exec plugin", ErrUnauthorized)

// routerTransport returns the transport of requests to the router: base with token as the
// bearer when token is set, otherwise with cfg's bearer credentials (token, token file or exec
// plugin, refreshed as client-go refreshes them). A cfg with no bearer credentials is an error
// that says how to get one.
func routerTransport(cfg *rest.Config, token string, base http.RoundTripper) (http.RoundTripper, error) {
	if token != "" {
		return &contract.BearerTransport{Token: token, Base: base}, nil
	}
	if cfg.BearerToken == "" && cfg.BearerTokenFile == "" && cfg.ExecProvider == nil && cfg.AuthProvider == nil {
		return nil, errNoBearer
	}
	// Only the bearer credentials go to the router: not the API server's TLS settings, basic
	// auth or impersonation.
	c := &rest.Config{
		Host:                cfg.Host,
		BearerToken:         cfg.BearerToken,
		BearerTokenFile:     cfg.BearerTokenFile,
		ExecProvider:        cfg.ExecProvider,
		AuthProvider:        cfg.AuthProvider,
		AuthConfigPersister: cfg.AuthConfigPersister,
		UserAgent:           cfg.UserAgent,
	}
	rt, err := rest.HTTPWrappersForConfig(c, base)
	if err != nil {
		return nil, fmt.Errorf("kubox: using the kubeconfig's credentials for the router: %w", err)
	}
	return rt, nil
}

// sandboxRouterURL is the base URL, under the router, of the agent of sandbox ns/name.
func sandboxRouterURL(router, ns, name string) string {
	return router + "/sandboxes/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
}

// directURL is the base URL of a sandbox's agent at its Pod IP.
func directURL(ip string, port int32) string {
	return "http://" + net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

// endpoint is where a sandbox's agent is reached and with which client.
type endpoint struct {
	base string
	http *http.Client
}

// notReadyGrace is how long a 503 of a sandbox the SDK saw Ready is sent again: the router's
// cache of the Sandbox can lag the SDK's own watch by a few milliseconds, right after Resume.
const notReadyGrace = 3 * time.Second

// retryNotReady sends a request again, with backoff, while the router answers 503 (not ready)
// for a sandbox that ready says the SDK saw Ready, for up to notReadyGrace. Requests whose body
// cannot be replayed are not sent again.
type retryNotReady struct {
	base  http.RoundTripper
	ready func() bool
}

// RoundTrip implements http.RoundTripper.
func (t *retryNotReady) RoundTrip(r *http.Request) (*http.Response, error) {
	delay, deadline := 20*time.Millisecond, time.Now().Add(notReadyGrace)
	for {
		resp, err := t.base.RoundTrip(r)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !t.ready() || time.Now().After(deadline) {
			return resp, err
		}
		if r.Body != nil && r.Body != http.NoBody {
			if r.GetBody == nil {
				return resp, err
			}
			body, berr := r.GetBody()
			if berr != nil {
				return resp, err
			}
			r = r.Clone(r.Context())
			r.Body = body
		}
		select {
		case <-r.Context().Done():
			return resp, err
		case <-time.After(delay):
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// routerBase returns the router's URL and client, starting the port-forward when that is the
// mode and it is not running.
func (c *Client) routerBase(ctx context.Context) (string, *http.Client, error) {
	if c.routerErr != nil {
		return "", nil, c.routerErr
	}
	switch c.opts.Connection {
	case ConnectRouter:
		return c.opts.RouterURL, c.router, nil
	case ConnectPortForward:
		u, err := c.forwardURL(ctx)
		if err != nil {
			return "", nil, err
		}
		return u, c.router, nil
	}
	return "", nil, fmt.Errorf("kubox: the router is not used with Options.Connection %q: "+
		"set Options.RouterURL, or Connection to %q", c.opts.Connection, ConnectPortForward)
}

// endpoint returns where s's agent is reached now.
func (s *Sandbox) endpoint(ctx context.Context) (endpoint, error) {
	if s.attached != nil {
		return *s.attached, nil
	}
	if s.c.opts.Connection != ConnectDirect {
		router, hc, err := s.c.routerBase(ctx)
		if err != nil {
			return endpoint{}, err
		}
		retry := &http.Client{Transport: &retryNotReady{base: hc.Transport, ready: s.seenReady}}
		return endpoint{base: sandboxRouterURL(router, s.ns, s.name), http: retry}, nil
	}
	sb := s.Object()
	if sb.Spec.Agent == nil {
		return endpoint{}, fmt.Errorf("sandbox %s has no spec.agent, so kubox-agent does not run in it: "+
			"claim it from a SandboxTemplate whose spec sets agent: {}", s)
	}
	if len(sb.Status.PodIPs) == 0 {
		return endpoint{}, fmt.Errorf("sandbox %s: %w: it has no Pod IP (suspended or starting); Resume it or wait for Ready", s, ErrNotReady)
	}
	if sb.Status.Agent == nil {
		// The controller records the ports in the same status write as the Pod IP; without
		// them the SDK does not guess one and send the agent token there.
		return endpoint{}, fmt.Errorf("sandbox %s: %w: its status does not record the agent's port yet (status.agent); "+
			"wait for Ready, or recreate its Pod (suspend and resume) if kubox-controller predates status.agent", s, ErrNotReady)
	}
	tok, err := s.agentToken(ctx, sb)
	if err != nil {
		return endpoint{}, err
	}
	return endpoint{
		base: directURL(sb.Status.PodIPs[0], sb.Status.Agent.Port),
		http: &http.Client{Transport: &contract.BearerTransport{Token: tok, Base: s.c.base}},
	}, nil
}
