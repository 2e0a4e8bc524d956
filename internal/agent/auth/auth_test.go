package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// token is a valid agent token (43 bytes, like the ones the controller derives).
const token = "qL7xV0c9kYtZ2mP4rN8sW1aB3dE5fG6hJ7kL8mN9oPq"

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadToken(t *testing.T) {
	const env = "KUBOX_TEST_AGENT_TOKEN"
	cases := map[string]struct {
		file    string // content of a token file; "-" for no file, "missing" for a path that does not exist
		env     string
		want    string
		wantErr []string // substrings of the error
	}{
		"file with trailing newline":       {file: token + "\n", want: token},
		"file with surrounding whitespace": {file: "  " + token + " \r\n\n", want: token},
		"file wins over env":               {file: token, env: strings.Repeat("e", 40), want: token},
		"env":                              {file: "-", env: token + "\n", want: token},
		"empty file": {file: "\n", env: token,
			wantErr: []string{"is empty", "head -c 32 /dev/urandom | base64 >", "/token"}},
		"short file": {file: "tiny\n",
			wantErr: []string{"has 4 bytes", "at least 32", "/token", "head -c 32 /dev/urandom"}},
		"missing file":   {file: "missing", wantErr: []string{"reading the agent token", "no such file"}},
		"space in token": {file: strings.Repeat("a", 20) + " " + strings.Repeat("b", 20), wantErr: []string{"cannot be sent"}},
		"short env":      {file: "-", env: "short", wantErr: []string{"environment variable " + env, "has 5 bytes"}},
		"neither":        {file: "-", wantErr: []string{"no agent token", env}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv(env, tc.env)
			var file string
			switch tc.file {
			case "-":
			case "missing":
				file = filepath.Join(t.TempDir(), "absent")
			default:
				file = writeFile(t, tc.file)
			}
			got, err := LoadToken(file, env)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("LoadToken = %q, want an error", got)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadToken: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("LoadToken = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadTokenWithoutEnvVarName(t *testing.T) {
	if _, err := LoadToken("", ""); err == nil || !strings.Contains(err.Error(), "no agent token") {
		t.Errorf("LoadToken(\"\", \"\") error = %v, want one saying there is no token", err)
	}
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func TestMiddleware(t *testing.T) {
	cases := map[string]struct {
		path      string
		header    []string // Authorization values
		query     string
		wantCode  int
		wantMsg   string // substring of the message on 401
		wantError bool   // WWW-Authenticate carries error="invalid_token"
	}{
		"right token":                 {header: []string{"Bearer " + token}, wantCode: http.StatusOK},
		"scheme is case-insensitive":  {header: []string{"bearer " + token}, wantCode: http.StatusOK},
		"extra spaces around token":   {header: []string{"Bearer   " + token + "  "}, wantCode: http.StatusOK},
		"missing":                     {wantCode: 401, wantMsg: "no Authorization header"},
		"wrong token":                 {header: []string{"Bearer " + strings.Repeat("x", 43)}, wantCode: 401, wantMsg: "not this sandbox's agent token", wantError: true},
		"token prefix":                {header: []string{"Bearer " + token[:42]}, wantCode: 401, wantMsg: "not this sandbox's agent token", wantError: true},
		"token with suffix":           {header: []string{"Bearer " + token + "x"}, wantCode: 401, wantMsg: "not this sandbox's agent token", wantError: true},
		"wrong scheme":                {header: []string{"Basic " + token}, wantCode: 401, wantMsg: `uses the "Basic" scheme`},
		"bare token":                  {header: []string{token}, wantCode: 401, wantMsg: "does not start with the Bearer scheme"},
		"scheme without token":        {header: []string{"Bearer"}, wantCode: 401, wantMsg: "no token"},
		"two headers":                 {header: []string{"Bearer " + token, "Bearer " + token}, wantCode: 401, wantMsg: "more than one"},
		"query-string token refused":  {query: "?token=" + token + "&access_token=" + token, wantCode: 401, wantMsg: "no Authorization header"},
		"exempt path needs no token":  {path: "/healthz", wantCode: http.StatusOK},
		"exempt path is exact":        {path: "/healthz/x", wantCode: 401},
		"exempt path with bad token":  {path: "/healthz", header: []string{"Bearer nope"}, wantCode: http.StatusOK},
		"other path with right token": {path: "/v1/exec", header: []string{"Bearer " + token}, wantCode: http.StatusOK},
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	h := Middleware(Fixed([]byte(token)), next, Options{ExemptPaths: []string{"/healthz"}})
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/execute"
			}
			r := httptest.NewRequest(http.MethodPost, path+tc.query, nil)
			for _, v := range tc.header {
				r.Header.Add("Authorization", v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantCode {
				t.Fatalf("status %d, want %d (body %s)", w.Code, tc.wantCode, w.Body)
			}
			if tc.wantCode != 401 {
				return
			}
			challenge := w.Header().Get("WWW-Authenticate")
			if !strings.HasPrefix(challenge, "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", challenge)
			}
			if got := strings.Contains(challenge, `error="invalid_token"`); got != tc.wantError {
				t.Errorf("WWW-Authenticate = %q; invalid_token there: %v, want %v", challenge, got, tc.wantError)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var body errorBody
			dec := json.NewDecoder(w.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				t.Fatalf("body is not {code, message}: %v", err)
			}
			if body.Code != "unauthenticated" {
				t.Errorf("code = %q, want unauthenticated", body.Code)
			}
			if !strings.Contains(body.Message, tc.wantMsg) {
				t.Errorf("message %q does not say %q", body.Message, tc.wantMsg)
			}
			// No message repeats a presented token, not even its first bytes.
			if strings.Contains(body.Message, token[:8]) || strings.Contains(body.Message, "xxxxxxxx") {
				t.Errorf("message %q echoes the token", body.Message)
			}
		})
	}
}

func TestMiddlewareCallsNextOnlyWhenAuthenticated(t *testing.T) {
	var calls int
	h := Middleware(Fixed([]byte(token)), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls++ }), Options{})
	for _, v := range []string{"", "Bearer wrong", "Bearer " + token} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if v != "" {
			r.Header.Set("Authorization", v)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if calls != 1 {
		t.Errorf("next called %d times, want 1 (only for the right token)", calls)
	}
}

func TestMiddlewareGRPCRequest(t *testing.T) {
	// gRPC and Connect carry the token in the same header.
	h := Middleware(Fixed([]byte(token)), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}), Options{})
	r := httptest.NewRequest(http.MethodPost, "/kubox.agent.v1.ProcessService/Start", nil)
	r.Header.Set("Content-Type", "application/grpc")
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("gRPC request with the token: status %d, want 200", w.Code)
	}
}

func TestMiddlewarePanicsOnEmptyToken(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Middleware accepted an empty token")
		}
	}()
	Middleware(nil, http.NotFoundHandler(), Options{})
}

func TestIsSchemeName(t *testing.T) {
	got := map[string]bool{}
	for _, s := range []string{"Basic", "Digest", "Negotiate", "", token, "a.b", "Bearer2", strings.Repeat("a", 17)} {
		got[s] = isSchemeName(s)
	}
	want := map[string]bool{"Basic": true, "Digest": true, "Negotiate": true, "": false, token: false,
		"a.b": false, "Bearer2": false, strings.Repeat("a", 17): false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("isSchemeName (-want +got):\n%s", diff)
	}
}

func TestE2BPresented(t *testing.T) {
	cases := map[string]struct {
		headers map[string]string
		want    string
	}{
		"X-Access-Token":                       {headers: map[string]string{"X-Access-Token": "tok"}, want: "tok"},
		"a bearer token":                       {headers: map[string]string{"Authorization": "Bearer tok"}, want: "tok"},
		"the scheme in any case":               {headers: map[string]string{"Authorization": "bearer  tok "}, want: "tok"},
		"X-Access-Token wins over a bearer":    {headers: map[string]string{"X-Access-Token": "a", "Authorization": "Bearer b"}, want: "a"},
		"E2B's Basic user header is no token":  {headers: map[string]string{"Authorization": "Basic dXNlcjo="}},
		"nothing":                              {},
		"E2B-Traffic-Access-Token is no token": {headers: map[string]string{"E2B-Traffic-Access-Token": "claim"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			if got := E2BPresented(r); got != tc.want {
				t.Errorf("E2BPresented() = %q, want %q", got, tc.want)
			}
		})
	}
}
