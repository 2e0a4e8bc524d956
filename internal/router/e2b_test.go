package router

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubox-dev/kubox/api/contract"
)

func TestE2BHost(t *testing.T) {
	rt := &Router{cfg: Config{E2BDomain: "e2b.example.com"}}
	for host, want := range map[string]struct {
		api  bool
		port int
		id   string
		ok   bool
	}{
		"api.e2b.example.com":                 {api: true, ok: true},
		"API.E2B.example.com:443":             {api: true, ok: true},
		"49983-e2b-abc.e2b.example.com":       {port: 49983, id: "e2b-abc", ok: true},
		"3000-e2b-abc.e2b.example.com:8080":   {port: 3000, id: "e2b-abc", ok: true},
		"e2b.example.com":                     {},
		"x.api.e2b.example.com":               {},
		"0-e2b-abc.e2b.example.com":           {},
		"70000-e2b-abc.e2b.example.com":       {},
		"49983-.e2b.example.com":              {},
		"49983-e2b-abc.e2b.example.com.evil":  {},
		"49983-e2b-abc.othere2b.example.com":  {},
		"49983-e2b-abc.preview.example.com":   {},
		"sandbox.e2b.example.com":             {},
		"49983e2b-abc.e2b.example.com":        {},
		"api.e2b.example.com.preview.example": {},
	} {
		api, port, id, ok := rt.e2bHost(host)
		if api != want.api || port != want.port || id != want.id || ok != want.ok {
			t.Errorf("%s: got api=%v port=%d id=%q ok=%v, want %+v", host, api, port, id, ok, want)
		}
	}
	if _, _, _, ok := (&Router{}).e2bHost("api.e2b.example.com"); ok {
		t.Error("a router without an E2B domain took an E2B host")
	}
}

func TestE2BKey(t *testing.T) {
	tok := "eyJhbGciOiJSUzI1NiJ9.payload.sig"
	for name, c := range map[string]struct {
		header, value, want string
		fails               bool
	}{
		"hex key":   {header: contract.E2BAPIKeyHeader, value: contract.E2BAPIKeyPrefix + hex.EncodeToString([]byte(tok)), want: tok},
		"raw key":   {header: contract.E2BAPIKeyHeader, value: tok, want: tok},
		"bearer":    {header: "Authorization", value: "Bearer " + tok, want: tok},
		"bad hex":   {header: contract.E2BAPIKeyHeader, value: contract.E2BAPIKeyPrefix + "xyz", fails: true},
		"basic":     {header: "Authorization", value: "Basic dXNlcjo=", fails: true},
		"no header": {},
	} {
		r := httptest.NewRequest(http.MethodGet, "/sandboxes", nil)
		if c.header != "" {
			r.Header.Set(c.header, c.value)
		}
		got, herr := e2bKey(r)
		if (herr != nil) != c.fails || got != c.want {
			t.Errorf("%s: got %q, %v", name, got, herr)
		}
	}
}

func TestServiceAccountNamespace(t *testing.T) {
	for user, want := range map[string]string{
		"system:serviceaccount:team-a:e2b": "team-a",
		"alice":                            "",
		"system:serviceaccounts:team-a":    "",
	} {
		if got := serviceAccountNamespace(user); got != want {
			t.Errorf("%s: got %q, want %q", user, got, want)
		}
	}
}

func TestE2BListFilter(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/v2/sandboxes?metadata=user%3Dalice%26team%3Da&state=running,paused", nil)
	f, herr := parseE2BListFilter(r)
	if herr != nil {
		t.Fatal(herr)
	}
	match := e2bDetail{State: e2bPaused, Metadata: map[string]string{"user": "alice", "team": "a", "x": "y"}}
	if !f.match(match) {
		t.Errorf("%+v does not match %+v", f, match)
	}
	if f.match(e2bDetail{State: e2bRunning, Metadata: map[string]string{"user": "alice"}}) {
		t.Error("a sandbox without team=a matched")
	}
	v1, _ := parseE2BListFilter(httptest.NewRequest(http.MethodGet, "/sandboxes", nil))
	if v1.match(e2bDetail{State: e2bPaused}) || !v1.match(e2bDetail{State: e2bRunning}) {
		t.Error("GET /sandboxes does not list running sandboxes only")
	}
	if _, herr := parseE2BListFilter(httptest.NewRequest(http.MethodGet, "/v2/sandboxes?state=killed", nil)); herr == nil {
		t.Error("state=killed was accepted")
	}
}

func TestNewE2BSandboxID(t *testing.T) {
	a, b := newE2BSandboxID(), newE2BSandboxID()
	if a == b || len(a) != len("e2b-")+16 {
		t.Errorf("ids %q and %q", a, b)
	}
}

// The access token E2B's SDKs send becomes the bearer token; their Basic user header is dropped
// and never mistaken for credentials.
func TestE2BCredentials(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/process.Process/Start", nil)
	r.Header.Set(contract.E2BAccessTokenHeader, "kbx1.a.b")
	r.Header.Set("Authorization", "Basic dXNlcjo=")
	e2bCredentials(r)
	if got := r.Header.Get("Authorization"); got != "Bearer kbx1.a.b" || r.Header.Get(contract.E2BAccessTokenHeader) != "" {
		t.Errorf("with an access token: Authorization %q, X-Access-Token %q", got, r.Header.Get(contract.E2BAccessTokenHeader))
	}
	r = httptest.NewRequest(http.MethodPost, "/process.Process/Start", nil)
	r.Header.Set("Authorization", "Basic dXNlcjo=")
	e2bCredentials(r)
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("with only the Basic user header: Authorization %q, want none", got)
	}
}
