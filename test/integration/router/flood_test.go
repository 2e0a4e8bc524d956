package router

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubox-dev/kubox/internal/router"
)

// junkPrefix starts every random token the flood tests send, so the review counter can tell
// junk reviews from real ones.
const junkPrefix = "junk-"

// reviewCounter counts the TokenReviews a router sends to the API server, at its transport:
// what actually leaves the router, whatever its caches and budgets think they do.
type reviewCounter struct {
	all, junk atomic.Int64
}

func (c *reviewCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/tokenreviews") {
			c.all.Add(1)
			if req.Body != nil {
				b, err := io.ReadAll(req.Body)
				_ = req.Body.Close()
				if err != nil {
					return nil, err
				}
				if bytes.Contains(b, []byte(junkPrefix)) {
					c.junk.Add(1)
				}
				req = req.Clone(req.Context())
				req.Body = io.NopCloser(bytes.NewReader(b))
			}
		}
		return next.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startCountedRouter is startRouter with the router's TokenReviews counted.
func startCountedRouter(t *testing.T, ns string, mutate func(*router.Config)) (*testRouter, *reviewCounter) {
	t.Helper()
	reviews := &reviewCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(reviews.wrap)
	rt, url := env.StartRouterAs(t, cfg, ns, key, mutate)
	return &testRouter{Router: rt, url: url, ns: ns}, reviews
}

// clientFrom is an HTTP client whose connections come from local address ip (any of
// 127.0.0.0/8 reaches the router): the router tells clients apart by address. Without
// keepAlive each request has a connection of its own, closed after it: no connection is left
// open, unused, to hold up the router's shutdown.
func clientFrom(t *testing.T, ip string, keepAlive bool) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: !keepAlive}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(ctx context.Context, c *http.Client, url, tok string) (int, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode, res.Header, nil
}

// The budget of unknown tokens in the flood test: one client gets floodBurst reviews at once and
// then one every 100 s, so the number of junk reviews has a bound the test can check.
const (
	floodBurst = 5
	floodQPS   = 0.01
)

func limitUnknownTokenReviews(c *router.Config) {
	c.TokenReviewBudget.BurstPerClient = floodBurst
	c.TokenReviewBudget.QPSPerClient = floodQPS
	c.TokenReviewBudget.MaxInflightPerClient = 2
}

// TestJunkTokenFloodDoesNotStarveRealClients floods the router from one address with 256
// concurrent senders of random (well-formed) tokens, more distinct tokens than the review
// cache holds, while real ServiceAccounts use it from another address.
func TestJunkTokenFloodDoesNotStarveRealClients(t *testing.T) {
	ns := env.NewNamespace(t)
	rt, reviews := startCountedRouter(t, ns, func(c *router.Config) {
		c.MaxConnectionsPerClient = 0 // the review budget itself must hold, not the connection limit
		c.AuthCacheTTL = 10 * time.Minute
		limitUnknownTokenReviews(c)
	})
	startAgentSandbox(t, ns, "box")
	known := serviceAccountToken(t, ns, "known")
	grantConnect(t, ns, "known", sandboxesGroup, "sandboxes", "box")
	fresh := serviceAccountToken(t, ns, "fresh")
	grantConnect(t, ns, "fresh", sandboxesGroup, "sandboxes", "box")
	// The router caches answers for 10 minutes: ask it only once RBAC allows both.
	waitAllowed(t, ns, "known", "box")
	waitAllowed(t, ns, "fresh", "box")
	url := rt.url + "/sandboxes/" + ns + "/box/healthz"
	real := clientFrom(t, "127.0.0.2", true)
	eventually(t, func() (bool, string) {
		code, _, err := get(t.Context(), real, url, known)
		return code == http.StatusOK, fmt.Sprintf("known ServiceAccount before the flood: %d %v", code, err)
	})

	// The flood: 256 senders, until told to stop and at least 4096+256 distinct tokens are sent.
	const senders, minTokens = 256, 4096 + 256
	flooder := clientFrom(t, "127.0.0.1", false)
	var (
		sent, answered, limited atomic.Int64
		running                 atomic.Int64
		stop                    atomic.Bool
		mu                      sync.Mutex
		unexpected              []string
		wg                      sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	for range senders {
		wg.Go(func() {
			running.Add(1)
			defer running.Add(-1)
			for n := sent.Add(1); !stop.Load() || n <= minTokens; n = sent.Add(1) {
				code, hdr, err := get(ctx, flooder, url, fmt.Sprintf("%s%d-%x", junkPrefix, n, time.Now().UnixNano()))
				if err != nil {
					return // the test is over
				}
				answered.Add(1)
				switch {
				case code == http.StatusUnauthorized:
				case code == http.StatusTooManyRequests && hdr.Get("Retry-After") != "":
					limited.Add(1)
				default:
					mu.Lock()
					unexpected = append(unexpected, fmt.Sprintf("%d (Retry-After %q)", code, hdr.Get("Retry-After")))
					mu.Unlock()
				}
			}
		})
	}
	// Let the flood get going before the real clients come.
	eventually(t, func() (bool, string) {
		return answered.Load() >= 2*senders, fmt.Sprintf("%d junk requests answered", answered.Load())
	})

	// A ServiceAccount the router has never seen, from another address, is reviewed and let in
	// while the flood runs.
	code, hdr, err := get(t.Context(), real, url, fresh)
	if code != http.StatusOK {
		t.Errorf("a new ServiceAccount during the flood: %d (Retry-After %q) %v; want 200", code, hdr.Get("Retry-After"), err)
	}
	if n := running.Load(); n != senders {
		t.Fatalf("only %d of %d flood senders were still running", n, senders)
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	cancel()

	t.Logf("Flood: %d junk requests in %s, %d answered 429, %d junk TokenReviews reached the API server",
		answered.Load(), elapsed.Round(time.Millisecond), limited.Load(), reviews.junk.Load())
	// Junk reviews are bounded by the per-client budget: the burst, then floodQPS.
	bound := int64(floodBurst) + int64(math.Ceil(floodQPS*elapsed.Seconds()))
	if got := reviews.junk.Load(); got > bound {
		t.Errorf("the API server received %d TokenReviews of junk tokens (of %d sent in %s); want at most %d (burst %d + %g/s)",
			got, answered.Load(), elapsed.Round(time.Millisecond), bound, floodBurst, floodQPS)
	}
	if len(unexpected) > 0 {
		t.Errorf("%d junk requests got neither 401 nor 429 with Retry-After, e.g. %s", len(unexpected), unexpected[0])
	}
	if limited.Load() == 0 || counter(t, rt, "sandbox_router_tokenreviews_limited_total", `scope="client"`) == 0 {
		t.Errorf("no junk request was limited (%d answered 429; sandbox_router_tokenreviews_limited_total{scope=client} = %v)",
			limited.Load(), counter(t, rt, "sandbox_router_tokenreviews_limited_total", `scope="client"`))
	}

	// The known ServiceAccount's cache entry survived: its next request costs no TokenReview.
	before := reviews.all.Load()
	if code, _, err := get(t.Context(), real, url, known); code != http.StatusOK {
		t.Fatalf("known ServiceAccount after the flood: %d %v; want 200", code, err)
	}
	if got := reviews.all.Load() - before; got != 0 {
		t.Errorf("the known ServiceAccount's request after the flood cost %d TokenReviews; want 0 (its cache entry was evicted by junk)", got)
	}
}

// waitAllowed waits until RBAC lets ServiceAccount sa of ns connect to sandbox name.
func waitAllowed(t *testing.T, ns, sa, name string) {
	t.Helper()
	cs := env.Clientset(t)
	eventually(t, func() (bool, string) {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:" + ns + ":" + sa,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: sandboxesGroup, Resource: "sandboxes",
					Subresource: "connect", Namespace: ns, Name: name}}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, fmt.Sprintf("RBAC lets %s connect to %s: %v %v", sa, name, sar, err)
	})
}

// TestMalformedTokensCostNoTokenReview sends tokens no Kubernetes authenticator accepts: the
// router refuses them itself, with a message saying what is wrong, and asks the API nothing.
func TestMalformedTokensCostNoTokenReview(t *testing.T) {
	ns := env.NewNamespace(t)
	rt, reviews := startCountedRouter(t, ns, nil)
	startAgentSandbox(t, ns, "box")
	url := rt.url + "/sandboxes/" + ns + "/box/healthz"
	eventuallyStatus(t, http.StatusUnauthorized, http.MethodGet, url, "")

	for name, tc := range map[string]struct {
		tok, wantMsg string
	}{
		"longer than 8 KiB":          {tok: junkPrefix + strings.Repeat("a", 8<<10), wantMsg: "--max-bearer-token-bytes"},
		"a space inside":             {tok: junkPrefix + "two words", wantMsg: "printable ASCII"},
		"8-bit byte":                 {tok: junkPrefix + "caf\xc3\xa9", wantMsg: "printable ASCII"},
		"JWT with a non-JSON header": {tok: "eyJub3QganNvbg.e30.c2ln" + junkPrefix, wantMsg: "JWT"},
		"JWT with a non-base64 part": {tok: "eyJhbGciOiJSUzI1NiJ9.e30.!" + junkPrefix, wantMsg: "JWT"},
		"forged claim token":         {tok: "kbx1.eyJucyI6ImEifQ.c2ln" + junkPrefix, wantMsg: "claim token"},
	} {
		t.Run(name, func(t *testing.T) {
			before := reviews.all.Load()
			res := do(t, http.MethodGet, url, "", bearer(tc.tok))
			if res.code != http.StatusUnauthorized || !strings.Contains(res.errorMessage(), tc.wantMsg) {
				t.Errorf("%s; want 401 mentioning %q", res, tc.wantMsg)
			}
			if got := reviews.all.Load() - before; got != 0 {
				t.Errorf("the router sent %d TokenReviews for it; want 0", got)
			}
		})
	}
	// A well-formed unknown token is reviewed: the counter counts.
	before := reviews.all.Load()
	if res := do(t, http.MethodGet, url, "", bearer(junkPrefix+"well-formed")); res.code != http.StatusUnauthorized {
		t.Errorf("a well-formed unknown token: %s; want 401", res)
	}
	if got := reviews.all.Load() - before; got != 1 {
		t.Errorf("a well-formed unknown token cost %d TokenReviews; want 1", got)
	}
	if got := counter(t, rt, "sandbox_router_token_rejections_total"); got < 5 {
		t.Errorf("sandbox_router_token_rejections_total = %v; want at least 5", got)
	}
}
