package authn

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const goodToken = "good-token-0123456789abcdef0123456789"

// fakeAPI answers TokenReviews (goodToken is alice) and SubjectAccessReviews (alice may connect
// to sandbox "a" only), and counts the calls.
func fakeAPI(t *testing.T) (*fake.Clientset, *int) {
	t.Helper()
	calls := 0
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		calls++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if tr.Spec.Token == goodToken {
			tr.Status.Authenticated = true
			tr.Status.User = authenticationv1.UserInfo{Username: "alice", Groups: []string{"devs"}}
		} else {
			tr.Status.Error = "invalid bearer token"
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		calls++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = sar.Spec.User == "alice" && sar.Spec.ResourceAttributes.Name == "a"
		return true, sar, nil
	})
	return c, &calls
}

func TestAuthenticateCachesByDigest(t *testing.T) {
	c, calls := fakeAPI(t)
	r := NewReviewer(c, time.Minute)
	ctx := context.Background()
	for range 3 {
		u, _, err := r.Authenticate(ctx, goodToken)
		if err != nil || u == nil || u.Name != "alice" {
			t.Fatalf("Authenticate = %+v, %v; want alice", u, err)
		}
	}
	u, why, err := r.Authenticate(ctx, "bad")
	if err != nil || u != nil || why == "" {
		t.Errorf("Authenticate(bad) = %+v, %q, %v; want no user and a reason", u, why, err)
	}
	if *calls != 2 {
		t.Errorf("%d TokenReviews, want 2 (one per distinct token)", *calls)
	}
	for _, k := range r.users.Keys() {
		if d, ok := k.([sha256.Size]byte); !ok || d != sha256.Sum256([]byte(goodToken)) && d != sha256.Sum256([]byte("bad")) {
			t.Errorf("cache key %T %v is not the SHA-256 of a token", k, k)
		}
	}
}

func TestAuthorizeCachesPerQuestion(t *testing.T) {
	c, calls := fakeAPI(t)
	r := NewReviewer(c, time.Minute)
	ctx := context.Background()
	alice := &User{Name: "alice", Groups: []string{"devs"}}
	attrs := func(name string) Attributes {
		return Attributes{Verb: "create", Group: "agents.x-k8s.io", Resource: "sandboxes", Subresource: "connect", Namespace: "ns", Name: name}
	}
	cases := []struct {
		user *User
		name string
		want bool
	}{
		{alice, "a", true},
		{alice, "a", true},
		{alice, "b", false},
		{&User{Name: "bob"}, "a", false},
		{alice, "b", false},
	}
	for i, tc := range cases {
		d, err := r.Authorize(ctx, tc.user, attrs(tc.name))
		if err != nil || d.Allowed != tc.want {
			t.Errorf("case %d: Authorize(%s, %s) = %+v, %v; want allowed=%v", i, tc.user.Name, tc.name, d, err, tc.want)
		}
	}
	if *calls != 3 {
		t.Errorf("%d SubjectAccessReviews, want 3 (one per distinct question)", *calls)
	}
}

func TestZeroTTLCachesNothing(t *testing.T) {
	c, calls := fakeAPI(t)
	r := NewReviewer(c, 0)
	for range 2 {
		if _, _, err := r.Authenticate(context.Background(), goodToken); err != nil {
			t.Fatal(err)
		}
	}
	if *calls != 2 {
		t.Errorf("%d TokenReviews, want 2", *calls)
	}
}

func TestDecisionKeyDistinguishesQuestions(t *testing.T) {
	base := Attributes{Verb: "create", Resource: "sandboxes", Namespace: "ab", Name: "c"}
	shifted := Attributes{Verb: "create", Resource: "sandboxes", Namespace: "a", Name: "bc"}
	u := &User{Name: "alice"}
	if decisionKey(u, base) == decisionKey(u, shifted) {
		t.Error("ab/c and a/bc share a cache key")
	}
	if decisionKey(&User{Name: "x", Groups: []string{"a", "b"}}, base) != decisionKey(&User{Name: "x", Groups: []string{"b", "a"}}, base) {
		t.Error("the order of groups changes the key")
	}
	if decisionKey(&User{Name: "x", Groups: []string{"admins"}}, base) == decisionKey(&User{Name: "x"}, base) {
		t.Error("groups do not change the key")
	}
}

func TestSharedToken(t *testing.T) {
	s := NewSharedToken([]byte("s3cret-s3cret-s3cret-s3cret-s3cret"))
	if !s.Matches("s3cret-s3cret-s3cret-s3cret-s3cret") || s.Matches("s3cret") || s.Matches("") {
		t.Error("SharedToken.Matches is wrong")
	}
	if (SharedToken{}).Matches("") || NewSharedToken(nil).Matches("") {
		t.Error("an unset shared token matched the empty token")
	}
}
