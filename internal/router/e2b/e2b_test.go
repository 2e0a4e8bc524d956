package e2b

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/kubox-dev/kubox/api/contract"
)

func TestE2BHost(t *testing.T) {
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
		api, port, id, ok := ParseHost("e2b.example.com", host)
		if api != want.api || port != want.port || id != want.id || ok != want.ok {
			t.Errorf("%s: got api=%v port=%d id=%q ok=%v, want %+v", host, api, port, id, ok, want)
		}
	}
	if _, _, _, ok := ParseHost("", "api.e2b.example.com"); ok {
		t.Error("a router without an E2B domain took an E2B host")
	}
}

func TestE2BDomainKeepsThePort(t *testing.T) {
	for host, want := range map[string]string{
		"api.e2b.example.com":      "e2b.example.com",
		"api.e2b.example.com:443":  "e2b.example.com",
		"api.e2b.example.com:8443": "e2b.example.com:8443",
	} {
		r := httptest.NewRequest(http.MethodPost, "/sandboxes", nil)
		r.Host = host
		if got := sandboxDomain("e2b.example.com", r); got != want {
			t.Errorf("Host %s: domain %q, want %q", host, got, want)
		}
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
	credentials(r)
	if got := r.Header.Get("Authorization"); got != "Bearer kbx1.a.b" || r.Header.Get(contract.E2BAccessTokenHeader) != "" {
		t.Errorf("with an access token: Authorization %q, X-Access-Token %q", got, r.Header.Get(contract.E2BAccessTokenHeader))
	}
	r = httptest.NewRequest(http.MethodPost, "/process.Process/Start", nil)
	r.Header.Set("Authorization", "Basic dXNlcjo=")
	credentials(r)
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("with only the Basic user header: Authorization %q, want none", got)
	}
}

// List pages walk every matching sandbox once, in start-time order (then ID), even when a
// sandbox of an earlier page goes away between requests.
func TestE2BListPages(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	var all []e2bDetail
	for i, id := range []string{"e2b-c", "e2b-a", "e2b-e", "e2b-b", "e2b-d"} {
		all = append(all, e2bDetail{SandboxID: id, StartedAt: t0.Add(time.Duration(i%3) * time.Minute)})
	}
	walk := func(q string, items []e2bDetail) []string {
		var got []string
		next := ""
		for range 10 {
			r := httptest.NewRequest(http.MethodGet, "/v2/sandboxes?"+q+"&nextToken="+next, nil)
			f, herr := parseE2BListFilter(r)
			if herr != nil {
				t.Fatalf("%s: %v", q, herr.Msg)
			}
			page, tok := f.page(slices.Clone(items))
			for _, d := range page {
				got = append(got, d.SandboxID)
			}
			if tok == "" {
				return got
			}
			next = tok
			items = slices.DeleteFunc(slices.Clone(items), func(d e2bDetail) bool { return d.SandboxID == page[0].SandboxID })
		}
		t.Fatalf("%s: more than 10 pages", q)
		return nil
	}
	// Start times: c, b at t0; a, d at t0+1m; e at t0+2m.
	if got, want := walk("order=asc&limit=2", all), []string{"e2b-b", "e2b-c", "e2b-a", "e2b-d", "e2b-e"}; !slices.Equal(got, want) {
		t.Errorf("asc pages of 2: %v, want %v", got, want)
	}
	if got, want := walk("limit=2", all), []string{"e2b-e", "e2b-d", "e2b-a", "e2b-c", "e2b-b"}; !slices.Equal(got, want) {
		t.Errorf("default (desc) pages of 2: %v, want %v", got, want)
	}
	for _, q := range []string{"order=up", "limit=0", "limit=1001", "nextToken=%21%21", "startedAfter=yesterday"} {
		if _, herr := parseE2BListFilter(httptest.NewRequest(http.MethodGet, "/v2/sandboxes?"+q, nil)); herr == nil || herr.Code != http.StatusBadRequest {
			t.Errorf("%s: accepted, want 400", q)
		}
	}
	f, _ := parseE2BListFilter(httptest.NewRequest(http.MethodGet, "/v2/sandboxes?template=python&startedAfter="+t0.Add(time.Minute).Format(time.RFC3339), nil))
	if f.match(e2bDetail{TemplateID: "python", StartedAt: t0}) || !f.match(e2bDetail{TemplateID: "python", StartedAt: t0.Add(time.Minute)}) ||
		f.match(e2bDetail{TemplateID: "other", StartedAt: t0.Add(time.Hour)}) {
		t.Error("template and startedAfter (inclusive) filters do not select what they name")
	}
}
