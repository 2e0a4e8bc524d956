package e2b

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/provenance"
	"github.com/kubox-dev/kubox/internal/router/authn"
	"github.com/kubox-dev/kubox/internal/router/httperr"
	"github.com/kubox-dev/kubox/internal/router/metrics"
	"github.com/kubox-dev/kubox/internal/router/wake"
)

// Config is the E2B API's part of the router's configuration.
type Config struct {
	// Domain is E2BDomain: the API is "api.{Domain}", sandboxes "{port}-{id}.{Domain}".
	Domain string
	// Namespace is where E2B's sandboxes (SandboxClaims) are; empty: the namespace of the API
	// key's ServiceAccount.
	Namespace string
	// WakeTimeout bounds create's, pause's, resume's and kill's waits.
	WakeTimeout time.Duration
	// ClaimTokenMaxTTL caps the lifetime of envd access tokens.
	ClaimTokenMaxTTL time.Duration
}

// Deps is what the API acts with: the router lends it what only the router can do (review
// tokens, mint claim tokens, read its cache), as functions, so this package imports nothing of
// the router's root package.
type Deps struct {
	// Kube acts with the caller's token (NewClient).
	Kube    client.Client
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Events wakes the API's waits when the cache changes a claim or its sandbox.
	Events *wake.Events
	// Synced reports whether the cache has loaded every Sandbox and SandboxClaim.
	Synced func() bool
	// Claim and Sandbox read the router's cache; nil, nil when the object does not exist.
	Claim   func(ctx context.Context, ns, name string) (*extv1beta1.SandboxClaim, *httperr.Error)
	Sandbox func(ctx context.Context, ns, name string) (*sandboxv1beta1.Sandbox, *httperr.Error)
	// CheckNamespace refuses a namespace the router does not serve.
	CheckNamespace func(ns string) *httperr.Error
	// IsSharedToken reports whether tok is the router's shared token (which is no API key).
	IsSharedToken func(tok string) bool
	// ReviewToken has a Kubernetes token reviewed as the router reviews every token; what names
	// it in messages, how says what to send instead.
	ReviewToken func(ctx context.Context, r *http.Request, tok, what string, how func() string) (*authn.User, *httperr.Error)
	// AuthorizeMint decides whether u may have a claim token of claim ns/name;
	// MintClaimToken mints one that expires at expiry (the router's one way to).
	AuthorizeMint  func(ctx context.Context, u *authn.User, ns, name string) *httperr.Error
	MintClaimToken func(ctx context.Context, u *authn.User, ns, name string, expiry time.Time) (string, *httperr.Error)
	// RecordDecision counts an authentication's outcome; Observe records who asked for what in
	// the access log.
	RecordDecision func(herr *httperr.Error)
	Observe        func(r *http.Request, principal, namespace, name string)
}

// API is E2B's control API.
type API struct {
	cfg  Config
	deps Deps
	kube client.Client
	mux  *http.ServeMux
}

// New returns the API of cfg acting with deps.
func New(cfg Config, deps Deps) *API {
	a := &API{cfg: cfg, deps: deps, kube: deps.Kube}
	a.mux = a.newMux()
	return a
}

// claimOwns reports whether sb's controller reference names the SandboxClaim with uid.
func claimOwns(sb *sandboxv1beta1.Sandbox, uid types.UID) bool {
	return uid != "" && provenance.ControlledBy(sb, provenance.SandboxClaim, uid)
}
