package authn

import (
	"encoding/base64"
	"strings"
	"testing"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// saJWT has the shape of a ServiceAccount token: an RS256 header, claims and a signature.
var saJWT = b64(`{"alg":"RS256","kid":"abc"}`) + "." + b64(`{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:ns:sa"}`) +
	"." + b64(strings.Repeat("\x01", 256))

func TestCheckToken(t *testing.T) {
	for name, tc := range map[string]struct {
		tok        string
		maxBytes   int
		wantReason string // "": accepted
	}{
		"ServiceAccount JWT":               {tok: saJWT},
		"JWT with padding":                 {tok: b64(`{"alg":"ES256"}`) + "==." + b64(`{}`) + "." + b64("sig") + "="},
		"unsigned JWT (API server judges)": {tok: b64(`{"alg":"none"}`) + "." + b64(`{}`) + "."},
		"bootstrap token":                  {tok: "abcdef.0123456789abcdef"},
		"static token with two dots":       {tok: "my.static.token"},
		"static token, symbols":            {tok: `p@ss:w0rd!#$%&'*+-/=?^_{|}~"(),;<>[\]`},
		"claim-like prefix is opaque here": {tok: "kbx2.abc.def"},
		"five parts starting eyJ (JWE)":    {tok: "eyJhbGciOiJSU0EifQ.a.b.c.d"},
		"one byte":                         {tok: "x"},
		"exactly the limit":                {tok: strings.Repeat("a", 100), maxBytes: 100},
		"default limit":                    {tok: strings.Repeat("a", DefaultMaxTokenBytes)},
		"over the limit":                   {tok: strings.Repeat("a", 101), maxBytes: 100, wantReason: MalformedTooLong},
		"over the default limit":           {tok: strings.Repeat("a", DefaultMaxTokenBytes+1), wantReason: MalformedTooLong},
		"space":                            {tok: "two words", wantReason: MalformedCharset},
		"tab":                              {tok: "tab\there", wantReason: MalformedCharset},
		"trailing newline":                 {tok: "token\n", wantReason: MalformedCharset},
		"NUL":                              {tok: "nul\x00", wantReason: MalformedCharset},
		"DEL":                              {tok: "del\x7f", wantReason: MalformedCharset},
		"UTF-8":                            {tok: "café", wantReason: MalformedCharset},
		"JWT, header not base64url":        {tok: "eyJ!!.e30.c2ln", wantReason: MalformedJWT},
		"JWT, payload not base64url":       {tok: b64(`{"alg":"RS256"}`) + ".e30+/.c2ln", wantReason: MalformedJWT},
		"JWT, signature not base64url":     {tok: b64(`{"alg":"RS256"}`) + ".e30.c2ln!", wantReason: MalformedJWT},
		"JWT, header not JSON":             {tok: "eyJub3QganNvbg.e30.c2ln", wantReason: MalformedJWT},
		"JWT, header JSON then garbage":    {tok: b64(`{"alg":"RS256"}x`) + ".e30.c2ln", wantReason: MalformedJWT},
		"JWT, header without alg":          {tok: b64(`{"typ":"JWT"}`) + ".e30.c2ln", wantReason: MalformedJWT},
		"JWT, alg not a string":            {tok: b64(`{"alg":1}`) + ".e30.c2ln", wantReason: MalformedJWT},
		"JWT, empty alg":                   {tok: b64(`{"alg":""}`) + ".e30.c2ln", wantReason: MalformedJWT},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckToken(tc.tok, tc.maxBytes)
			got := ""
			if err != nil {
				got = err.Reason
				if strings.Contains(err.Error(), tc.tok) {
					t.Errorf("the message %q repeats the token", err)
				}
			}
			if got != tc.wantReason {
				t.Errorf("CheckToken = %v (reason %q); want reason %q", err, got, tc.wantReason)
			}
		})
	}
}

// FuzzCheckToken checks CheckToken's promises on any input: it never panics, never accepts a
// token that is too long or has a byte outside printable ASCII, and always accepts a printable
// token that cannot be mistaken for a JWT.
func FuzzCheckToken(f *testing.F) {
	for _, s := range []string{saJWT, "abcdef.0123456789abcdef", "my.static.token", "kbx1.eyJucyI6ImEifQ.c2ln",
		"eyJub3QganNvbg.e30.c2ln", "eyJhbGciOiJub25lIn0.e30.", "two words", "café", "", "eyJ..", "eyJ=.=.="} {
		f.Add(s)
	}
	const limit = 512
	f.Fuzz(func(t *testing.T, tok string) {
		err := CheckToken(tok, limit)
		printable := true
		for i := 0; i < len(tok); i++ {
			printable = printable && tok[i] >= 0x21 && tok[i] <= 0x7e
		}
		switch {
		case len(tok) > limit:
			if err == nil || err.Reason != MalformedTooLong {
				t.Fatalf("a %d-byte token: %v; want %s", len(tok), err, MalformedTooLong)
			}
		case !printable:
			if err == nil || err.Reason != MalformedCharset {
				t.Fatalf("a token with a non-printable byte: %v; want %s", err, MalformedCharset)
			}
		case !strings.HasPrefix(tok, "eyJ") || strings.Count(tok, ".") != 2:
			if err != nil {
				t.Fatalf("a printable token that is no JWT was refused: %v", err)
			}
		case err != nil && err.Reason != MalformedJWT:
			t.Fatalf("a JWT-shaped token: %v; want nil or %s", err, MalformedJWT)
		}
	})
}
