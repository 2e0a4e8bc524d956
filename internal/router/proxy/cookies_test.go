package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// browserCookieName is the name a browser gives the cookie of a Set-Cookie value (RFC 6265bis
// 5.6): the name-value pair ends at the first ';'; without '=' the cookie has no name.
func browserCookieName(setCookie string) string {
	pair, _, _ := strings.Cut(setCookie, ";")
	name, _, ok := strings.Cut(pair, "=")
	if !ok {
		return ""
	}
	return strings.Trim(name, " \t")
}

func TestStripTokenSetCookie(t *testing.T) {
	h := http.Header{"Set-Cookie": {
		"kubox-token=a", "KUBOX-TOKEN=b; Domain=example.com", " kubox-token =c", "__Host-kubox-token=d; Secure; Path=/",
		"__secure-Kubox-Token=e", "theme=dark", "kubox-token-x=f", "session=1; HttpOnly",
	}, "Set-Cookie2": {"kubox-token=g"}, "X-Other": {"kept"}}
	StripTokenSetCookie(h)
	want := http.Header{"Set-Cookie": {"theme=dark", "kubox-token-x=f", "session=1; HttpOnly"}, "X-Other": {"kept"}}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("stripTokenSetCookie (-want +got):\n%s", diff)
	}
}

// FuzzTokenCookieNeverPasses: whatever a sandbox's Set-Cookie or a client's Cookie holds, what the
// router passes on sets or carries no kubox-token cookie, as a browser or net/http reads it,
// and the other cookies pass.
func FuzzTokenCookieNeverPasses(f *testing.F) {
	for _, s := range []string{
		"kubox-token=x", "KUBOX-TOKEN=x; Domain=preview.test", "\tkubox-token=x", "__Host-kubox-token=x",
		"__Secure-kubox-token=x", "a=b; kubox-token=x", "kubox-token", "=kubox-token", "theme=dark",
		"kubox-token=x; kubox-token=y", "__host-__secure-kubox-token=x", "kubox-token=x\r\nSet-Cookie: y=z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Set-Cookie": {v, "other=1"}}
		StripTokenSetCookie(h)
		for _, kept := range h.Values("Set-Cookie") {
			if n := browserCookieName(kept); IsTokenCookieName(n) {
				t.Errorf("Set-Cookie %q passed: a browser sets cookie %q", kept, n)
			}
			if c, err := http.ParseSetCookie(kept); err == nil && IsTokenCookieName(c.Name) {
				t.Errorf("Set-Cookie %q passed: net/http reads cookie %q", kept, c.Name)
			}
		}
		if !strings.Contains(strings.Join(h.Values("Set-Cookie"), "\n"), "other=1") {
			t.Errorf("another cookie was dropped with %q", v)
		}

		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Cookie", v+"; other=1")
		StripTokenCookie(req.Header)
		for _, c := range req.Cookies() {
			if IsTokenCookieName(c.Name) {
				t.Errorf("Cookie %q passed to the sandbox: it gets cookie %q", v, c.Name)
			}
		}
		if _, err := req.Cookie("other"); err != nil {
			t.Errorf("the cookie other=1 was dropped with %q", v)
		}
	})
}

func TestStripTokenCookie(t *testing.T) {
	cases := map[string]struct {
		in   []string
		want []string
	}{
		"only the token":  {in: []string{"kubox-token=secret"}, want: nil},
		"others kept":     {in: []string{"a=1; kubox-token=secret; b=2"}, want: []string{"a=1; b=2"}},
		"several headers": {in: []string{"a=1", "kubox-token=x", "c=3"}, want: []string{"a=1; c=3"}},
		"none":            {in: nil, want: nil},
		"similar name":    {in: []string{"kubox-token2=keep"}, want: []string{"kubox-token2=keep"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.in {
				h.Add("Cookie", v)
			}
			StripTokenCookie(h)
			if diff := cmp.Diff(tc.want, h.Values("Cookie")); diff != "" {
				t.Errorf("Cookie (-want +got):\n%s", diff)
			}
		})
	}
}
