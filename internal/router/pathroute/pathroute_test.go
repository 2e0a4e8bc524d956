package pathroute

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidatePathPrefix(t *testing.T) {
	for p, ok := range map[string]bool{
		"": true, "/browse": true, "/a/b-c_d.e~f": true,
		"browse": false, "/browse/": false, "/": false, "/a//b": false, "/a b": false, "/a?b": false, "/a%2Fb": false,
		"/sandboxes": false, "/claims/x": false, "/v1": false, "/healthz": false, "/ui": false, "/a/../b": false, "/.": false,
	} {
		if err := ValidatePrefix(p); (err == nil) != ok {
			t.Errorf("ValidatePrefix(%q) = %v; want ok=%v", p, err, ok)
		}
	}
}

func TestRewriteLocation(t *testing.T) {
	const base = "/browse/team/web/3000"
	hosts := []string{"10.0.0.7:3000", "router.example", ""}
	for v, want := range map[string]string{
		"/login?next=%2Fx#top":                   base + "/login?next=%2Fx#top",
		"/":                                      base + "/",
		base + "/already":                        base + "/already",
		base:                                     base,
		"relative/page":                          "relative/page",
		"../up":                                  "../up",
		"//evil.example/x":                       "//evil.example/x",
		"http://10.0.0.7:3000/app?q=1":           base + "/app?q=1",
		"http://10.0.0.7:3000":                   base + "/",
		"http://10.0.0.7:3000?q":                 base + "/?q",
		"https://router.example/app":             "https://router.example" + base + "/app",
		"https://ROUTER.example:443/app":         "https://ROUTER.example:443" + base + "/app",
		"https://router.example" + base + "/ok":  "https://router.example" + base + "/ok",
		"https://elsewhere.example/app":          "https://elsewhere.example/app",
		"https://user@router.example/app":        "https://user@router.example/app",
		"mailto:someone@example.com":             "mailto:someone@example.com",
		"/browse/team/other/3000/x":              base + "/browse/team/other/3000/x",
		"/browse/team/web/30000/not-under-base/": base + "/browse/team/web/30000/not-under-base/",
	} {
		if got := rewriteLocation(v, base, hosts); got != want {
			t.Errorf("rewriteLocation(%q) = %q; want %q", v, got, want)
		}
	}
}

func TestConfineResponse(t *testing.T) {
	const base = "/browse/team/web/3000"
	for _, rewrite := range []bool{false, true} {
		req := httptest.NewRequest(http.MethodGet, "http://10.0.0.7:3000/js/sw.js", nil)
		res := &http.Response{Request: req, Header: http.Header{
			"Location":               {"/login"},
			"Content-Location":       {"/js/sw.js"},
			"Set-Cookie":             {"sid=1; Path=/; HttpOnly", "a=2; path=/x/../../..", "b=3", "c=4; Path=" + base + "/mine"},
			"Service-Worker-Allowed": {"/"},
		}}
		ConfineResponse(res, base, "10.0.0.7:3000", rewrite)
		wantLoc, wantCL := "/login", "/js/sw.js"
		if rewrite {
			wantLoc, wantCL = base+"/login", base+"/js/sw.js"
		}
		if got := res.Header.Get("Location"); got != wantLoc {
			t.Errorf("rewrite=%v: Location %q; want %q", rewrite, got, wantLoc)
		}
		if got := res.Header.Get("Content-Location"); got != wantCL {
			t.Errorf("rewrite=%v: Content-Location %q; want %q", rewrite, got, wantCL)
		}
		// Confined whatever the flag: the origin is shared with every other sandbox.
		wantCookies := []string{"sid=1; Path=" + base + "/; HttpOnly", "a=2; Path=" + base + "/", "b=3", "c=4; Path=" + base + "/mine"}
		if diff := cmp.Diff(wantCookies, res.Header.Values("Set-Cookie")); diff != "" {
			t.Errorf("rewrite=%v: Set-Cookie (-want +got):\n%s", rewrite, diff)
		}
		if got := res.Header.Get("Service-Worker-Allowed"); got != base+"/" {
			t.Errorf("rewrite=%v: Service-Worker-Allowed %q; want %q", rewrite, got, base+"/")
		}
	}
}

func TestConfineServiceWorker(t *testing.T) {
	const base = "/browse/team/web/3000"
	for v, want := range map[string]string{
		"/":                      base + "/",
		"/app/":                  base + "/app/",
		"../":                    base + "/",
		"../../../../../":        base + "/",
		"/%2e%2e/%2E%2E/":        base + "/",
		base + "/app/":           base + "/app/",
		"https://router.example": "",
		"//router.example/":      "",
	} {
		h := http.Header{"Service-Worker-Allowed": {v}}
		confineServiceWorker(h, base, "/js/sw.js")
		if got := h.Get("Service-Worker-Allowed"); got != want {
			t.Errorf("Service-Worker-Allowed %q became %q; want %q", v, got, want)
		}
	}
}

func TestCheckNext(t *testing.T) {
	for next, ok := range map[string]bool{
		"": true, "3000": true, "3000/": true, "3000/index.html?x=1#y": true, "8080/a%2Fb": true,
		"0/": false, "65536/": false, "http://evil/": false, "/3000/": false, "3000/../other/": false,
		"3000/%2e%2e/x": false, "3000/a\\b": false, "3000/a\nb": false, "x/": false, "3000/a%2F..%2Fb": true,
	} {
		if herr := CheckNext(next); (herr == nil) != ok {
			t.Errorf("CheckNext(%q) = %v; want ok=%v", next, herr, ok)
		}
	}
}

func TestGrants(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	now := time.Unix(1_800_000_000, 0)
	g := Grant{Use: UseTicket, Namespace: "team", Name: "web", UID: "uid-1", Subject: "alice", Expiry: now.Add(time.Minute).Unix(), ID: "id"}
	tok := MintGrant(key, g)
	if got, herr := VerifyGrant(key, tok, UseTicket, now); herr != nil || got != g {
		t.Fatalf("verifyGrant = %+v, %v; want %+v", got, herr, g)
	}
	payload, sig, _ := strings.Cut(strings.TrimPrefix(tok, GrantPrefix), ".")
	for name, tc := range map[string]struct {
		tok, use string
		at       time.Time
		msg      string
	}{
		"a session is not a ticket": {tok, UseSession, now, "is a ticket, not a session"},
		"expired":                   {tok, UseTicket, now.Add(time.Minute), "has expired"},
		"other key":                 {MintGrant([]byte(strings.Repeat("x", 32)), g), UseTicket, now, "signature does not match"},
		"altered":                   {GrantPrefix + payload + "x." + sig, UseTicket, now, "signature does not match"},
		"claim token":               {"kbx1." + payload + "." + sig, UseTicket, now, "malformed"},
		"no signature":              {GrantPrefix + payload, UseTicket, now, "malformed"},
	} {
		if _, herr := VerifyGrant(key, tc.tok, tc.use, tc.at); herr == nil || herr.Code != http.StatusUnauthorized || !strings.Contains(herr.Msg, tc.msg) {
			t.Errorf("%s: %v; want 401 saying %q", name, herr, tc.msg)
		}
	}
	if herr := g.Authorize("team", "other", false); herr == nil || herr.Code != http.StatusForbidden {
		t.Errorf("a grant for team/web opened team/other: %v", herr)
	}
	if herr := g.Authorize("team", "web", true); herr == nil {
		t.Error("a grant for sandbox team/web opened claim team/web")
	}
}

func TestTicketLedgerIsOneUse(t *testing.T) {
	var l Ledger
	now := time.Unix(1000, 0)
	if !l.Redeem("a", 1060, now) || l.Redeem("a", 1060, now.Add(time.Second)) {
		t.Fatal("a ticket was redeemed twice (or not at all)")
	}
	if !l.Redeem("b", 1060, now) {
		t.Error("another ticket was refused")
	}
	l.Redeem("c", 2000, now.Add(2*time.Minute))
	if len(l.used) != 1 {
		t.Errorf("expired tickets are kept: %v", l.used)
	}
}
