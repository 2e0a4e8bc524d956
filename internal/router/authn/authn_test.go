package authn

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
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

// newTestReviewer is a Reviewer whose clients are both c, with an unlimited budget.
func newTestReviewer(c kubernetes.Interface, ttl time.Duration) *Reviewer {
	clk := clock.RealClock{}
	return NewReviewer(Clients{Trusted: c, Unknown: c}, ttl, NewBudget(BudgetConfig{}, clk), clk)
}

func TestAuthenticateCachesByDigest(t *testing.T) {
	c, calls := fakeAPI(t)
	r := newTestReviewer(c, time.Minute)
	ctx := context.Background()
	for range 3 {
		u, _, err := r.Authenticate(ctx, goodToken, "client")
		if err != nil || u == nil || u.Name != "alice" {
			t.Fatalf("Authenticate = %+v, %v; want alice", u, err)
		}
	}
	u, why, err := r.Authenticate(ctx, "bad", "client")
	if err != nil || u != nil || why == "" {
		t.Errorf("Authenticate(bad) = %+v, %q, %v; want no user and a reason", u, why, err)
	}
	if *calls != 2 {
		t.Errorf("%d TokenReviews, want 2 (one per distinct token)", *calls)
	}
	for _, k := range append(r.good.Keys(), r.bad.Keys()...) {
		if d, ok := k.([sha256.Size]byte); !ok || d != sha256.Sum256([]byte(goodToken)) && d != sha256.Sum256([]byte("bad")) {
			t.Errorf("cache key %T %v is not the SHA-256 of a token", k, k)
		}
	}
}

func TestAuthorizeCachesPerQuestion(t *testing.T) {
	c, calls := fakeAPI(t)
	r := newTestReviewer(c, time.Minute)
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
	r := newTestReviewer(c, 0)
	for range 2 {
		if _, _, err := r.Authenticate(context.Background(), goodToken, "client"); err != nil {
			t.Fatal(err)
		}
	}
	if *calls != 2 {
		t.Errorf("%d TokenReviews, want 2", *calls)
	}
}

// TestJunkEvictsOnlyJunk reviews more rejected tokens than a cache holds: the accepted token's
// entry stays, and its next use costs no review.
func TestJunkEvictsOnlyJunk(t *testing.T) {
	c, calls := fakeAPI(t)
	r := newTestReviewer(c, time.Minute)
	ctx := context.Background()
	if u, _, err := r.Authenticate(ctx, goodToken, "real"); err != nil || u == nil {
		t.Fatalf("Authenticate(good) = %v, %v", u, err)
	}
	for i := range cacheSize + 100 {
		if u, _, err := r.Authenticate(ctx, fmt.Sprint("junk-", i), "flood"); err != nil || u != nil {
			t.Fatalf("Authenticate(junk) = %v, %v", u, err)
		}
	}
	before := *calls
	if u, _, err := r.Authenticate(ctx, goodToken, "real"); err != nil || u == nil {
		t.Fatalf("Authenticate(good) after the junk = %v, %v", u, err)
	}
	if *calls != before {
		t.Errorf("the good token cost %d TokenReviews after the junk; want 0", *calls-before)
	}
	if n := len(r.bad.Keys()); n > cacheSize {
		t.Errorf("%d rejected tokens cached; want at most %d", n, cacheSize)
	}
}

// countingAPI answers like fakeAPI and counts TokenReviews per client.
func countingAPI(t *testing.T) (kubernetes.Interface, *int) {
	c, _ := fakeAPI(t)
	n := 0
	c.PrependReactor("create", "tokenreviews", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		n++
		return false, nil, nil
	})
	return c, &n
}

func TestWhichClientAndBudgetReviewsAToken(t *testing.T) {
	trusted, trustedCalls := countingAPI(t)
	unknown, unknownCalls := countingAPI(t)
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	// One unknown token per client, ever: the budget never refills.
	budget := NewBudget(BudgetConfig{QPSPerClient: 1e-9, BurstPerClient: 1}, clk)
	r := NewReviewer(Clients{Trusted: trusted, Unknown: unknown}, time.Minute, budget, clk)
	ctx := context.Background()
	type counts struct{ Trusted, Unknown int }
	calls := func() counts { return counts{*trustedCalls, *unknownCalls} }
	check := func(what string, tok, client string, wantUser bool, wantErr string, want counts) {
		t.Helper()
		u, _, err := r.Authenticate(ctx, tok, client)
		gotErr := ""
		if err != nil {
			gotErr = err.(*LimitedError).Scope
		}
		if (u != nil) != wantUser || gotErr != wantErr {
			t.Errorf("%s: user %v, error %v; want user %v, error scope %q", what, u, err, wantUser, wantErr)
		}
		if diff := cmp.Diff(want, calls()); diff != "" {
			t.Errorf("%s: TokenReviews so far (-want +got):\n%s", what, diff)
		}
	}
	check("first use of the good token", goodToken, "a", true, "", counts{0, 1})
	check("within the TTL", goodToken, "a", true, "", counts{0, 1})
	check("junk from client a, whose budget is spent", "junk", "a", false, ScopeClient, counts{0, 1})
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	check("the good token after its TTL: re-reviewed outside the budget", goodToken, "a", true, "", counts{1, 1})
	check("junk from client b", "junk", "b", false, "", counts{1, 2})
	check("the same junk again: the negative cache answers", "junk", "b", false, "", counts{1, 2})
	clk.SetTime(clk.Now().Add(DefaultNegativeCacheTTL + time.Second))
	check("the same junk after the negative TTL: the budget of b is spent", "junk", "b", false, ScopeClient, counts{1, 2})
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

func TestServiceAccountNamespace(t *testing.T) {
	for user, want := range map[string]string{
		"system:serviceaccount:team-a:e2b": "team-a",
		"alice":                            "",
		"system:serviceaccounts:team-a":    "",
	} {
		if got := ServiceAccountNamespace(user); got != want {
			t.Errorf("%s: got %q, want %q", user, got, want)
		}
	}
}
