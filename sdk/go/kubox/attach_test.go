package kubox

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func TestParseRoute(t *testing.T) {
	for in, want := range map[string][3]string{
		"http://r:8080/claims/team-a/c1":          {"team-a", "c1", "c1"},
		"https://r/prefix/claims/team-a/c1/":      {"team-a", "c1", "c1"},
		"http://r/sandboxes/ns/box":               {"ns", "box", ""},
		"http://r/claims/ns/with%2Fslash-escaped": {"ns", "with/slash-escaped", "with/slash-escaped"},
	} {
		ns, name, claim, err := parseRoute(in)
		if err != nil || [3]string{ns, name, claim} != want {
			t.Errorf("parseRoute(%q) = %q %q %q, %v; want %q", in, ns, name, claim, err, want)
		}
	}
	for _, bad := range []string{"r:8080/claims/a/b", "ftp://r/claims/a/b", "http://r/claims/a", "http://r/sandbox/a/b", "http:///claims/a/b"} {
		if _, _, _, err := parseRoute(bad); err == nil {
			t.Errorf("parseRoute(%q) succeeded; want an error naming the routes", bad)
		}
	}
}

// TestAttachedSandbox checks that an attached sandbox sends its calls under the route with the
// token, and that the calls needing the Kubernetes API say so instead of panicking.
func TestAttachedSandbox(t *testing.T) {
	var mu sync.Mutex
	var paths, auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths, auths = append(paths, r.URL.Path), append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"the claim token has expired","code":401}`))
	}))
	defer srv.Close()

	if _, err := Attach(srv.URL+"/claims/ns/c1", ""); err == nil {
		t.Fatal("Attach without a token succeeded")
	}
	sb, err := Attach(srv.URL+"/claims/ns/c1", "kbx1.tok")
	if err != nil {
		t.Fatal(err)
	}
	if sb.String() != "ns/c1" || sb.ClaimName() != "c1" {
		t.Errorf("attached sandbox %s claim %q; want ns/c1, claim c1", sb, sb.ClaimName())
	}
	ctx := context.Background()
	if _, err := sb.Files().ReadFile(ctx, "/etc/hostname"); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("ReadFile through a router that refuses the token: %v; want ErrUnauthorized", err)
	}
	if _, err := sb.Run(ctx, "true"); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Run through a router that refuses the token: %v; want ErrUnauthorized", err)
	}
	mu.Lock()
	for i, p := range paths {
		if len(p) < len("/claims/ns/c1/") || p[:len("/claims/ns/c1/")] != "/claims/ns/c1/" || auths[i] != "Bearer kbx1.tok" {
			t.Errorf("request %d went to %q with %q; want under /claims/ns/c1/ with the token", i, p, auths[i])
		}
	}
	if len(paths) != 2 {
		t.Errorf("%d requests reached the router; want 2", len(paths))
	}
	mu.Unlock()
	for name, err := range map[string]error{"Suspend": sb.Suspend(ctx), "Resume": sb.Resume(ctx), "Close": sb.Close(ctx)} {
		if !errors.Is(err, ErrAttached) {
			t.Errorf("%s of an attached sandbox: %v; want ErrAttached", name, err)
		}
	}
}
