package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// viewer is who calls the API: a Kubernetes identity, and the token the dashboard acts with.
type viewer struct {
	user, token string
}

// tokenKey carries a viewer's token to callerTransport.
type tokenKey struct{}

func asViewer(ctx context.Context, v *viewer) context.Context {
	return context.WithValue(ctx, tokenKey{}, v.token)
}

// newCallerClient returns a client with restConfig's address and CA but not its credentials:
// every request carries the token of the viewer its context names (asViewer), so one client
// serves every viewer, each with their own rights.
func newCallerClient(restConfig *rest.Config) (client.Client, error) {
	cfg := rest.AnonymousClientConfig(restConfig)
	cfg.QPS, cfg.Burst = restConfig.QPS, restConfig.Burst
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper { return callerTransport{next} })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the dashboard's Kubernetes client: %w", err)
	}
	// The mapper discovers with the router's own credentials: which kinds exist is no secret.
	own, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the dashboard's discovery client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(restConfig, own)
	if err != nil {
		return nil, fmt.Errorf("creating the dashboard's REST mapper: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: newScheme(), HTTPClient: hc, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("creating the dashboard's Kubernetes client: %w", err)
	}
	return c, nil
}

// callerTransport sends the viewer's token; a request without one goes without credentials.
type callerTransport struct{ next http.RoundTripper }

func (t callerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, _ := r.Context().Value(tokenKey{}).(string)
	if tok == "" {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set(contract.AuthorizationHeader, contract.BearerScheme+" "+tok)
	return t.next.RoundTrip(r)
}

// bearerToken returns the token of `Authorization: Bearer <token>`.
func bearerToken(r *http.Request) (string, *Error) {
	scheme, tok, _ := strings.Cut(strings.TrimSpace(r.Header.Get(contract.AuthorizationHeader)), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, contract.BearerScheme) || tok == "" {
		return "", errorf(http.StatusUnauthorized, "the dashboard's API needs 'Authorization: Bearer <token>' with a Kubernetes token "+
			"(kubectl create token <serviceaccount>, or your kubeconfig's); log in again")
	}
	return tok, nil
}

// authenticate reviews token with the router and returns the viewer.
func (h *Handler) authenticate(r *http.Request, token string) (*viewer, *Error) {
	user, err := h.opts.Authenticate(r, token)
	if err != nil {
		return nil, err
	}
	return &viewer{user: user, token: token}, nil
}

// handlerFunc is an API operation, run with the viewer's token.
type handlerFunc func(ctx context.Context, w http.ResponseWriter, r *http.Request, v *viewer) *Error

// authed authenticates the request's bearer token, then runs f as its viewer.
func (h *Handler) authed(f handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, herr := bearerToken(r)
		var v *viewer
		if herr == nil {
			v, herr = h.authenticate(r, tok)
		}
		if herr == nil {
			herr = f(asViewer(r.Context(), v), w, r, v)
		}
		if herr != nil {
			writeError(w, herr)
		}
	}
}

// newScheme knows the kinds the dashboard reads and writes.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(authorizationv1.AddToScheme(s))
	return s
}
