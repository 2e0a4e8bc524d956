// Package authn asks the Kubernetes API who presents a bearer token (TokenReview) and whether
// that identity may do something (SubjectAccessReview), with short-lived LRU caches in front of
// both so a client making many requests costs the API server one review per cache period.
//
// Anyone who reaches the router can send tokens, so unknown tokens are the flood-prone path:
// CheckToken refuses those that cannot be real before any API call, and a Budget (per client
// and overall, never queueing) bounds the reviews of the rest. Tokens accepted before, and
// SubjectAccessReviews of authenticated identities, take a separate client outside that budget.
//
// Caches are keyed by SHA-256 digests: the raw token is never stored, so a heap dump of the
// router does not hand out its clients' credentials.
package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// cacheSize bounds each cache; entries past it are evicted least recently used first.
const cacheSize = 4096

// DefaultNegativeCacheTTL is how long a rejected token's answer is reused (at most the TTL
// given to NewReviewer): long enough that a client retrying a bad token costs no review per
// request, short enough that the cache of rejections holds only recent junk.
const DefaultNegativeCacheTTL = 5 * time.Second

// knownGoodFor is how long a token the API server accepted stays known: after its answer's TTL
// it is reviewed again, but through the trusted client and outside the budget of unknown tokens,
// so a flood of random tokens cannot delay the clients the router already knows.
const knownGoodFor = time.Hour

// User is an identity the API server vouched for.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string]authenticationv1.ExtraValue
}

// Attributes are what a SubjectAccessReview asks about: may the user do Verb on
// Group/Resource/Subresource Name in Namespace.
type Attributes struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

// Decision is the answer of a SubjectAccessReview.
type Decision struct {
	Allowed bool
	// Reason is the authorizer's explanation, often empty.
	Reason string
}

// goodEntry is a token the API server accepted, and when it last said so.
type goodEntry struct {
	user     *User
	reviewed time.Time
}

// Clients are the Kubernetes clients of a Reviewer. Each has its own client-side rate limiter
// and connection pool, so reviews of unknown tokens never wait behind, or hold up, the others.
type Clients struct {
	// Trusted asks SubjectAccessReviews (for identities already authenticated) and reviews
	// tokens the API server accepted before.
	Trusted kubernetes.Interface
	// Unknown reviews tokens not known to be good: what random tokens cost. The Budget bounds
	// it, without queueing; its own rate limiter should be off, or it would queue.
	Unknown kubernetes.Interface
}

// Reviewer authenticates tokens and authorizes users against the Kubernetes API.
//
// Accepted and rejected tokens are remembered in separate LRU caches, so junk tokens can only
// evict junk: a flood cannot push a good identity out and make it pay a review again.
type Reviewer struct {
	clients   Clients
	budget    *Budget
	clock     clock.PassiveClock
	ttl       time.Duration
	badTTL    time.Duration
	good      *cache.LRUExpireCache // token digest -> goodEntry, for knownGoodFor
	bad       *cache.LRUExpireCache // token digest -> the API server's reason, for badTTL
	decisions *cache.LRUExpireCache
}

// NewReviewer returns a Reviewer that reuses each answer for ttl (0: not at all; a rejection
// for at most DefaultNegativeCacheTTL) and reviews unknown tokens within budget.
func NewReviewer(clients Clients, ttl time.Duration, budget *Budget, clk clock.PassiveClock) *Reviewer {
	return &Reviewer{
		clients:   clients,
		budget:    budget,
		clock:     clk,
		ttl:       ttl,
		badTTL:    min(ttl, DefaultNegativeCacheTTL),
		good:      cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		bad:       cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		decisions: cache.NewLRUExpireCacheWithClock(cacheSize, clk),
	}
}

// Authenticate returns who token belongs to; client (the caller's IP address) is whose budget an
// unknown token's review is taken from. A token the API server does not accept gives a nil User
// and the server's reason. An error means no answer: a *LimitedError when the budget has no
// room (nothing was asked), otherwise the review failed; neither is cached.
func (r *Reviewer) Authenticate(ctx context.Context, token, client string) (*User, string, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := r.good.Get(key); ok {
		e := v.(goodEntry)
		if r.clock.Since(e.reviewed) < r.ttl {
			return e.user, "", nil
		}
		return r.review(ctx, r.clients.Trusted, key, token)
	}
	if v, ok := r.bad.Get(key); ok {
		return nil, v.(string), nil
	}
	release, lerr := r.budget.Acquire(client)
	if lerr != nil {
		return nil, "", lerr
	}
	defer release()
	return r.review(ctx, r.clients.Unknown, key, token)
}

// review asks the API server about token with c and remembers the answer.
func (r *Reviewer) review(ctx context.Context, c kubernetes.Interface, key [sha256.Size]byte, token string) (*User, string, error) {
	tr, err := c.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("asking the Kubernetes API to review the bearer token (TokenReview): %w", err)
	}
	if !tr.Status.Authenticated {
		r.good.Remove(key)
		if r.badTTL > 0 {
			r.bad.Add(key, tr.Status.Error, r.badTTL)
		}
		return nil, tr.Status.Error, nil
	}
	u := tr.Status.User
	user := &User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	r.bad.Remove(key)
	r.good.Add(key, goodEntry{user: user, reviewed: r.clock.Now()}, max(knownGoodFor, r.ttl))
	return user, "", nil
}

// Authorize asks whether u may do a; an error means the review itself failed.
func (r *Reviewer) Authorize(ctx context.Context, u *User, a Attributes) (Decision, error) {
	key := decisionKey(u, a)
	if v, ok := r.decisions.Get(key); ok {
		return v.(Decision), nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := r.clients.Trusted.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource,
				Namespace: a.Namespace, Name: a.Name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return Decision{}, fmt.Errorf("asking the Kubernetes API whether %s may %s %s/%s %s/%s (SubjectAccessReview): %w",
			u.Name, a.Verb, a.Resource, a.Subresource, a.Namespace, a.Name, err)
	}
	d := Decision{Allowed: sar.Status.Allowed && !sar.Status.Denied, Reason: sar.Status.Reason}
	if r.ttl > 0 {
		r.decisions.Add(key, d, r.ttl)
	}
	return d, nil
}

// decisionKey digests everything a SubjectAccessReview depends on, each part length-prefixed so
// that no two different questions share a key.
func decisionKey(u *User, a Attributes) [sha256.Size]byte {
	h := sha256.New()
	write := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, s := range []string{u.Name, u.UID, a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace, a.Name} {
		write(s)
	}
	groups := slices.Clone(u.Groups)
	sort.Strings(groups)
	write(fmt.Sprint(len(groups)))
	for _, g := range groups {
		write(g)
	}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		write(k)
		write(fmt.Sprint(len(u.Extra[k])))
		for _, v := range u.Extra[k] {
			write(v)
		}
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// SharedToken holds the router's shared bearer token as a digest.
type SharedToken struct{ want *[sha256.Size]byte }

// NewSharedToken returns a checker for tok; an empty tok accepts nothing.
func NewSharedToken(tok []byte) SharedToken {
	if len(tok) == 0 {
		return SharedToken{}
	}
	sum := sha256.Sum256(tok)
	return SharedToken{want: &sum}
}

// Matches reports whether tok is the shared token, in time independent of both tokens' bytes.
func (s SharedToken) Matches(tok string) bool {
	if s.want == nil {
		return false
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], s.want[:]) == 1
}

// Configured reports whether a shared token is set.
func (s SharedToken) Configured() bool { return s.want != nil }

// ServiceAccountNamespace returns the namespace of a ServiceAccount's user name
// (system:serviceaccount:{ns}:{name}); "" for other users. The router's E2B API and the
// dashboard act in it when the caller names no namespace.
func ServiceAccountNamespace(user string) string {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return ""
	}
	ns, _, _ := strings.Cut(rest, ":")
	return ns
}
