// Package authn asks the Kubernetes API who presents a bearer token (TokenReview) and whether
// that identity may do something (SubjectAccessReview), with short-lived LRU caches in front of
// both so a client making many requests costs the API server one review per cache period.
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
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
)

// cacheSize bounds each cache; entries past it are evicted least recently used first.
const cacheSize = 4096

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

type userEntry struct {
	user *User // nil: the API server did not accept the token
	why  string
}

// Reviewer authenticates tokens and authorizes users against the Kubernetes API.
type Reviewer struct {
	client    kubernetes.Interface
	ttl       time.Duration
	users     *cache.LRUExpireCache
	decisions *cache.LRUExpireCache
}

// NewReviewer returns a Reviewer that remembers each answer for ttl (0: not at all).
func NewReviewer(client kubernetes.Interface, ttl time.Duration) *Reviewer {
	return &Reviewer{
		client:    client,
		ttl:       ttl,
		users:     cache.NewLRUExpireCache(cacheSize),
		decisions: cache.NewLRUExpireCache(cacheSize),
	}
}

// Authenticate returns who token belongs to. A token the API server does not accept gives a nil
// User and the server's reason; an error means the review itself failed (and is not cached).
func (r *Reviewer) Authenticate(ctx context.Context, token string) (*User, string, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := r.users.Get(key); ok {
		e := v.(userEntry)
		return e.user, e.why, nil
	}
	tr, err := r.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("asking the Kubernetes API to review the bearer token (TokenReview): %w", err)
	}
	e := userEntry{why: tr.Status.Error}
	if tr.Status.Authenticated {
		u := tr.Status.User
		e.user = &User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	r.remember(r.users, key, e)
	return e.user, e.why, nil
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
	sar, err := r.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
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
	r.remember(r.decisions, key, d)
	return d, nil
}

func (r *Reviewer) remember(c *cache.LRUExpireCache, key, value any) {
	if r.ttl > 0 {
		c.Add(key, value, r.ttl)
	}
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
