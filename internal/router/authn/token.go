package authn

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// DefaultMaxTokenBytes is the longest bearer token CheckToken accepts by default. ServiceAccount
// tokens are 1-2 KiB; OIDC ID tokens with many groups can be several KiB. 8 KiB is also what
// common proxies (nginx's large_client_header_buffers) let through in one header line, so a
// longer token would fail in front of most routers anyway.
const DefaultMaxTokenBytes = 8 << 10

// Reasons of a MalformedError, also the reason label of sandbox_router_token_rejections_total.
const (
	// MalformedTooLong: the token is longer than the router's limit.
	MalformedTooLong = "too_long"
	// MalformedCharset: the token has a byte that is not printable ASCII (space, control, 8-bit).
	MalformedCharset = "charset"
	// MalformedJWT: the token looks like a JWT but is not one.
	MalformedJWT = "jwt"
)

// MalformedError says why a token cannot be one the Kubernetes API accepts. Its message never
// repeats the token.
type MalformedError struct {
	Reason string
	msg    string
}

func (e *MalformedError) Error() string { return e.msg }

func malformed(reason, format string, args ...any) *MalformedError {
	return &MalformedError{Reason: reason, msg: "the bearer token is malformed: " + fmt.Sprintf(format, args...)}
}

// CheckToken refuses tokens that no Kubernetes authenticator can accept, so they cost no
// TokenReview. It must never refuse a real token of any kind, so it checks only:
//
//   - length: at most maxBytes (0: DefaultMaxTokenBytes);
//   - bytes: printable ASCII without spaces (0x21-0x7E). The API server's own bearer parser
//     stops at the first space, and HTTP header values outside ASCII are not portable; every
//     token type (JWTs, bootstrap tokens "abcdef.0123456789abcdef", static and webhook tokens
//     sent by kubectl) is printable ASCII;
//   - JWT shape, only for a token that announces itself as a JWT: three dot-separated segments
//     with the first starting "eyJ" (base64url of `{"`, how every JSON header begins). Then
//     each segment must be base64url (trailing "=" tolerated, as the API server's JOSE parser
//     does) and the header a JSON object with a string "alg". A token of that form that fails
//     is refused by every JWT authenticator of the API server; only a static or webhook token
//     deliberately chosen to look like a broken JWT could be accepted there and is refused here.
//     Bootstrap tokens are lowercase and have one dot, so they never take this path.
func CheckToken(tok string, maxBytes int) *MalformedError {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxTokenBytes
	}
	if len(tok) > maxBytes {
		return malformed(MalformedTooLong, "it has %d bytes, more than the router's limit of %d (--max-bearer-token-bytes)", len(tok), maxBytes)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 0x21 || c > 0x7e {
			return malformed(MalformedCharset, "byte %d is 0x%02x; Kubernetes tokens are printable ASCII without spaces "+
				"(check for a trailing newline or a quote pasted with the token)", i, c)
		}
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "eyJ") {
		return nil
	}
	var seg [3][]byte
	for i, p := range parts {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p, "="))
		if err != nil {
			return malformed(MalformedJWT, "it looks like a JWT but part %d of 3 is not base64url", i+1)
		}
		seg[i] = b
	}
	var header struct {
		Alg *string `json:"alg"`
	}
	if err := json.Unmarshal(seg[0], &header); err != nil || header.Alg == nil || *header.Alg == "" {
		return malformed(MalformedJWT, `it looks like a JWT but its header is not a JSON object with "alg"`)
	}
	return nil
}
