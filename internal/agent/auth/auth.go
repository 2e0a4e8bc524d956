// Package auth checks the per-sandbox bearer token kubox-agent requires of every request.
//
// The controller derives each sandbox's token from a key it shares with the router (see
// api/contract.DeriveAgentToken) and writes it into a Secret the sandbox's Pod mounts; the agent loads it
// (WatchFile, which follows the file) and Middleware rejects any request that does not carry it as
// `Authorization: Bearer <token>`. gRPC and Connect clients send the same header, so one check
// covers plain HTTP, gRPC and Connect alike; they read the 401 as the Unauthenticated code.
//
// A token in the query string (`?token=...`, as browsers and WebSocket clients that cannot set
// headers sometimes use) is not accepted: URLs end up in access logs, proxy logs, browser history
// and Referer headers, so a token there leaks to whoever reads them. Browsers reach a sandbox
// through kubox-router, which authenticates the user its own way and adds the header.
package auth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/kubox-dev/kubox/api/contract"
)

// MinTokenBytes is the shortest token accepted. Tokens the controller derives have 43 bytes.
const MinTokenBytes = 32

// LoadToken returns the agent token from file, when file is not empty, or else from the
// environment variable envVar. Surrounding whitespace (the trailing newline of `echo`) is not
// part of the token. The token must have at least MinTokenBytes bytes, all printable ASCII
// without spaces, so that it fits in an Authorization header.
func LoadToken(file, envVar string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the agent token: %w; mount the sandbox's agent token Secret "+
				"there (the controller creates it for sandboxes with spec.agent set)", err)
		}
		return checkToken(bytes.TrimSpace(b), "the agent token file "+file, file)
	}
	if envVar != "" {
		if v := os.Getenv(envVar); v != "" {
			return checkToken(bytes.TrimSpace([]byte(v)), "the environment variable "+envVar, "")
		}
	}
	if envVar == "" {
		return nil, fmt.Errorf("no agent token: no token file is given")
	}
	return nil, fmt.Errorf("no agent token: no token file is given and the environment variable %s "+
		"is not set; give the file the controller mounts from the sandbox's agent token Secret", envVar)
}

// checkToken validates a token read from source; file, when not empty, is named in the fix.
func checkToken(tok []byte, source, file string) ([]byte, error) {
	fix := "set it to the sandbox's agent token, or to a random one such as the output of " +
		"`head -c 32 /dev/urandom | base64`"
	if file != "" {
		fix = "mount the sandbox's agent token Secret there, or write a random token into it: " +
			"head -c 32 /dev/urandom | base64 > " + file
	}
	if len(tok) == 0 {
		return nil, fmt.Errorf("%s is empty; %s", source, fix)
	}
	if len(tok) < MinTokenBytes {
		return nil, fmt.Errorf("the agent token in %s has %d bytes; it needs at least %d: %s",
			source, len(tok), MinTokenBytes, fix)
	}
	for _, c := range tok {
		if c <= ' ' || c > '~' {
			return nil, fmt.Errorf("the agent token in %s contains a space, control or non-ASCII byte, "+
				"which cannot be sent in an Authorization header: %s", source, fix)
		}
	}
	return tok, nil
}

// Options configures Middleware.
type Options struct {
	// ExemptPaths are URL paths served without a token, matched exactly (for example "/healthz",
	// which kubelet probes without credentials). Keep them to endpoints that reveal nothing.
	ExemptPaths []string
}

// Middleware returns a handler that passes a request to next only when it carries
// `Authorization: Bearer <token>`, or its path is one of opts.ExemptPaths. Other requests get
// 401 with `WWW-Authenticate: Bearer` and a JSON body {"code":"unauthenticated","message":...}
// saying what is missing or wrong; the message never repeats a token.
//
// The presented token is compared with Token.Matches, in constant time, with the token current
// at that request. Middleware panics when token is nil: every request would then need no secret.
func Middleware(token *Token, next http.Handler, opts Options) http.Handler {
	if token == nil {
		panic("auth.Middleware: no agent token")
	}
	exempt := make(map[string]bool, len(opts.ExemptPaths))
	for _, p := range opts.ExemptPaths {
		exempt[p] = true
	}
	return &middleware{token: token, next: next, exempt: exempt}
}

type middleware struct {
	token  *Token
	next   http.Handler
	exempt map[string]bool
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.exempt[r.URL.Path] {
		m.next.ServeHTTP(w, r)
		return
	}
	if problem := m.check(r.Header.Values(contract.AuthorizationHeader)); problem != "" {
		unauthenticated(w, problem, problem == msgWrongToken)
		return
	}
	m.next.ServeHTTP(w, r)
}

const (
	hint          = "; send the sandbox's agent token as 'Authorization: Bearer <token>'"
	msgMissing    = "the request has no Authorization header" + hint
	msgMany       = "the request has more than one Authorization header" + hint
	msgNoToken    = "the Authorization header has the Bearer scheme but no token" + hint
	msgWrongToken = "the bearer token is not this sandbox's agent token; " +
		"the router derives it from the sandbox's UID, so check that the request reached the intended sandbox"
)

// check returns what is wrong with the Authorization header values, or "" when they carry the
// token.
func (m *middleware) check(values []string) string {
	switch len(values) {
	case 0:
		return msgMissing
	case 1:
	default:
		return msgMany
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !strings.EqualFold(scheme, contract.BearerScheme) {
		if !isSchemeName(scheme) {
			// Perhaps a bare token: say nothing of its bytes.
			return "the Authorization header does not start with the Bearer scheme" + hint
		}
		return fmt.Sprintf("the Authorization header uses the %q scheme; the agent accepts only Bearer%s", scheme, hint)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return msgNoToken
	}
	if !m.token.Matches([]byte(tok)) {
		return msgWrongToken
	}
	return ""
}

// isSchemeName reports whether s looks like an authentication scheme (Basic, Digest, Token, ...)
// and so may be named in a message. Anything else, such as a token sent without a scheme, is not
// repeated: all tokens are longer than 16 bytes.
func isSchemeName(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return true
}

func unauthenticated(w http.ResponseWriter, message string, invalidToken bool) {
	challenge := `Bearer realm="kubox-agent"`
	if invalidToken {
		challenge += `, error="invalid_token"`
	}
	h := w.Header()
	h.Set("WWW-Authenticate", challenge)
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{"unauthenticated", message})
}

// E2BPresented is the token an E2B client presents to a sandbox: the X-Access-Token header E2B's
// SDKs send, else an "Authorization: Bearer" token; "" when neither is there. E2B's SDKs also
// send "Authorization: Basic <user>:" to name a user, which is not a token and is not read when
// an access token is present. The envd and code-interpreter ports check it against the agent
// token.
func E2BPresented(r *http.Request) string {
	if got := r.Header.Get(contract.E2BAccessTokenHeader); got != "" {
		return got
	}
	scheme, tok, _ := strings.Cut(r.Header.Get(contract.AuthorizationHeader), " ")
	if strings.EqualFold(scheme, contract.BearerScheme) {
		return strings.TrimSpace(tok)
	}
	return ""
}
