package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubox-dev/kubox/internal/router/claimtoken"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// verifiedFor is how long a verified token is trusted before it is checked again. The API
// server and the router check it on every use anyway; this only bounds how late a revoked
// token is refused at the MCP layer (with 401) rather than per call.
const verifiedFor = time.Minute

// callerKey is where the verified caller travels in auth.TokenInfo.Extra.
const callerKey = "kubox.caller"

// caller is who a tool call acts as.
type caller struct {
	// id names the identity, and binds the caller's HTTP sessions and claims to it (the MCP SDK
	// refuses a session's requests from another id): "kubernetes:<user>/<uid>" as the API server
	// answered for the token, or "claim-token:<SHA-256 of the token>" for a claim token. Never
	// anything the caller wrote: a claim token's payload is not verified here (the router, which
	// holds the key, verifies it on every use), so only the whole token, which only its holder
	// has, names its caller.
	id string
	// kube acts with the caller's Kubernetes identity; nil for a claim token.
	kube *kubox.Client
	// grant is what a claim token names; token is the token, for the router.
	grant claimtoken.Claims
	token string
}

// callerOf returns the caller of a tool call: the verified bearer of an HTTP request, or the
// local user of a stdio session.
func (s *Server) callerOf(req *mcp.CallToolRequest) (*caller, error) {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		if c, ok := req.Extra.TokenInfo.Extra[callerKey].(*caller); ok {
			return c, nil
		}
	}
	if s.local != nil {
		return s.local, nil
	}
	return nil, errors.New("this request carries no verified identity")
}

// verify is the HTTP endpoint's auth.TokenVerifier.
func (s *Server) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	key := tokenDigest(token)
	c, err := s.callers.get(key, func() (*caller, error) { return s.newCaller(ctx, token, key) })
	if err != nil {
		return nil, err
	}
	return &auth.TokenInfo{UserID: c.id, Expiration: time.Now().Add(verifiedFor), Extra: map[string]any{callerKey: c}}, nil
}

// tokenDigest is the hex SHA-256 of token: the callers' cache key, and a claim token's identity.
func tokenDigest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// newCaller checks token and builds the clients that act with it; digest is tokenDigest(token).
// A claim token is read (Peek) only to address its claim's sandbox through the router, which
// verifies it; what it says is never who the caller is.
func (s *Server) newCaller(ctx context.Context, token, digest string) (*caller, error) {
	if strings.HasPrefix(token, claimtoken.Prefix) {
		g, err := claimtoken.Peek(token, time.Now())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &caller{id: "claim-token:" + digest, grant: g, token: token}, nil
	}
	cfg := rest.AnonymousClientConfig(s.cfg.API)
	cfg.BearerToken = token
	user, err := whoAmI(ctx, cfg)
	if err != nil {
		return nil, err
	}
	kc, err := kubox.New(cfg, kubox.Options{Namespace: s.cfg.Namespace, Connection: kubox.ConnectRouter, RouterURL: s.cfg.RouterURL, Token: token})
	if err != nil {
		return nil, err
	}
	return &caller{id: "kubernetes:" + user, kube: kc}, nil
}

// whoAmI asks the API server who cfg's token is: a SelfSubjectReview, which every authenticated
// identity may create, so the check needs no rights of the server's.
func whoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("%w: the API server did not accept the token: %v", auth.ErrInvalidToken, err)
	}
	u := r.Status.UserInfo
	if u.Username == "" {
		return "", fmt.Errorf("%w: the API server knows no user for the token", auth.ErrInvalidToken)
	}
	if u.UID != "" {
		return u.Username + "/" + u.UID, nil
	}
	return u.Username, nil
}

// attach opens the sandbox of a claim token's claim through the router.
func (c *caller) attach(routerURL string) (*kubox.Sandbox, error) {
	u := strings.TrimRight(routerURL, "/") + "/claims/" + url.PathEscape(c.grant.Namespace) + "/" + url.PathEscape(c.grant.Claim)
	return kubox.Attach(u, c.token)
}

// callerCache keeps verified callers by the SHA-256 of their token for verifiedFor, so that a
// session's requests reuse one set of clients and one check.
type callerCache struct {
	mu sync.Mutex
	m  map[string]cachedCaller
}

type cachedCaller struct {
	c       *caller
	expires time.Time
}

func newCallerCache() *callerCache { return &callerCache{m: map[string]cachedCaller{}} }

// get returns the caller of key, making it with mk when absent or stale.
func (cc *callerCache) get(key string, mk func() (*caller, error)) (*caller, error) {
	now := time.Now()
	cc.mu.Lock()
	e, ok := cc.m[key]
	cc.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.c, nil
	}
	c, err := mk()
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for k, v := range cc.m {
		if now.After(v.expires) {
			delete(cc.m, k)
		}
	}
	cc.m[key] = cachedCaller{c: c, expires: now.Add(verifiedFor)}
	return c, nil
}
